import JournalFormat

/// The colour names DrawTogether sends: SwiftUI's standard `Color`s, spelled as the Swift
/// static members (lowercase, exact match).
///
/// SwiftUI's colours adapt to the platform and appearance; the journal stores one sRGB value,
/// the iOS light-appearance system colour each name stands for:
///
/// | name     | R   | G   | B   | A   | hex         |
/// |----------|-----|-----|-----|-----|-------------|
/// | `black`  | 0   | 0   | 0   | 255 | `#000000FF` |
/// | `blue`   | 0   | 122 | 255 | 255 | `#007AFFFF` |
/// | `brown`  | 162 | 132 | 94  | 255 | `#A2845EFF` |
/// | `clear`  | 0   | 0   | 0   | 0   | `#00000000` |
/// | `cyan`   | 50  | 173 | 230 | 255 | `#32ADE6FF` |
/// | `gray`   | 142 | 142 | 147 | 255 | `#8E8E93FF` |
/// | `green`  | 52  | 199 | 89  | 255 | `#34C759FF` |
/// | `indigo` | 88  | 86  | 214 | 255 | `#5856D6FF` |
/// | `mint`   | 0   | 199 | 190 | 255 | `#00C7BEFF` |
/// | `orange` | 255 | 149 | 0   | 255 | `#FF9500FF` |
/// | `pink`   | 255 | 45  | 85  | 255 | `#FF2D55FF` |
/// | `purple` | 175 | 82  | 222 | 255 | `#AF52DEFF` |
/// | `red`    | 255 | 59  | 48  | 255 | `#FF3B30FF` |
/// | `teal`   | 48  | 176 | 199 | 255 | `#30B0C7FF` |
/// | `white`  | 255 | 255 | 255 | 255 | `#FFFFFFFF` |
/// | `yellow` | 255 | 204 | 0   | 255 | `#FFCC00FF` |
public enum NamedColors {
    /// Every name with its value, in the order of the table above.
    public static let all: [(name: String, color: RGBA)] = [
        ("black", RGBA(rawValue: 0x0000_00FF)),
        ("blue", RGBA(rawValue: 0x007A_FFFF)),
        ("brown", RGBA(rawValue: 0xA284_5EFF)),
        ("clear", RGBA(rawValue: 0x0000_0000)),
        ("cyan", RGBA(rawValue: 0x32AD_E6FF)),
        ("gray", RGBA(rawValue: 0x8E8E_93FF)),
        ("green", RGBA(rawValue: 0x34C7_59FF)),
        ("indigo", RGBA(rawValue: 0x5856_D6FF)),
        ("mint", RGBA(rawValue: 0x00C7_BEFF)),
        ("orange", RGBA(rawValue: 0xFF95_00FF)),
        ("pink", RGBA(rawValue: 0xFF2D_55FF)),
        ("purple", RGBA(rawValue: 0xAF52_DEFF)),
        ("red", RGBA(rawValue: 0xFF3B_30FF)),
        ("teal", RGBA(rawValue: 0x30B0_C7FF)),
        ("white", RGBA(rawValue: 0xFFFF_FFFF)),
        ("yellow", RGBA(rawValue: 0xFFCC_00FF)),
    ]

    /// The colour a name stands for, or nil for a name not in the table.
    public static func color(named name: some StringProtocol) -> RGBA? {
        var copy = String(name)
        return copy.withUTF8 { lookup($0.baseAddress, count: $0.count) }
    }

    static func lookup(_ base: UnsafePointer<UInt8>?, count: Int) -> RGBA? {
        guard let base, count >= 3, count <= 6 else { return nil }
        let bytes = UnsafeBufferPointer(start: base, count: count)
        for entry in all where entry.name.utf8.elementsEqual(bytes) {
            return entry.color
        }
        return nil
    }
}
