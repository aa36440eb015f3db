/// A 128-bit identifier stored as two big-endian halves, so that comparing `(high, low)`
/// orders exactly like comparing the 16 bytes lexicographically.
public struct UUIDBits: Hashable, Comparable, Sendable {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Reads 16 bytes, most significant first.
    public init<C: Collection>(bytes: C) where C.Element == UInt8 {
        precondition(bytes.count == 16, "a 128-bit id needs exactly 16 bytes")
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    public var bytes: [UInt8] {
        (0..<16).map { index in
            let word = index < 8 ? high : low
            return UInt8(truncatingIfNeeded: word >> (UInt64(7 - index % 8) * 8))
        }
    }

    public static func < (lhs: UUIDBits, rhs: UUIDBits) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }

    /// 32 lowercase hex digits, no dashes.
    public var compactHex: String {
        Hex.string(high, digits: 16) + Hex.string(low, digits: 16)
    }

    /// `XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX`, uppercase (as Foundation's `UUID` prints).
    public var uuidString: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(36)
        appendUUIDString(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the `uuidString` form as UTF-8, for encoders that build bytes.
    public func appendUUIDString(to bytes: inout [UInt8]) {
        Hex.append(high, digits: 8, uppercase: true, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        Hex.append(high << 32, digits: 4, uppercase: true, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        Hex.append(high << 48, digits: 4, uppercase: true, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        Hex.append(low, digits: 4, uppercase: true, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        Hex.append(low << 16, digits: 12, uppercase: true, to: &bytes)
    }

    /// Parses 32 hex digits, with or without the four dashes of the UUID layout.
    public init?(parsing text: some StringProtocol) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        var count = 0
        for (index, unit) in text.utf8.enumerated() {
            if unit == UInt8(ascii: "-") {
                // Dashes only where a UUID puts them.
                guard [8, 13, 18, 23].contains(index), text.utf8.count == 36 else { return nil }
                continue
            }
            let nibble = Hex.digitValue(unit)
            guard nibble != Hex.invalidDigit else { return nil }
            if count < 16 { high = high << 4 | UInt64(nibble) } else { low = low << 4 | UInt64(nibble) }
            count += 1
            if count > 32 { return nil }
        }
        guard count == 32 else { return nil }
        self.init(high: high, low: low)
    }

    public static func random() -> UUIDBits {
        var generator = SystemRandomNumberGenerator()
        return UUIDBits(high: generator.next(), low: generator.next())
    }
}

/// The identity of one writer of a journal (invariant 2): random, 128 bits.
public struct ReplicaID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var bits: UUIDBits
    public init(_ bits: UUIDBits) { self.bits = bits }
    public static func random() -> ReplicaID { ReplicaID(.random()) }
    /// Exactly 32 lowercase hex digits: the one spelling of a replica folder's name, so that
    /// two folders can never denote the same replica.
    public init?(hex: some StringProtocol) {
        guard hex.utf8.count == 32, hex.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }),
              let bits = UUIDBits(parsing: hex) else { return nil }
        self.bits = bits
    }
    /// 32 lowercase hex digits: the replica's folder name under `replicas/`.
    public var hex: String { bits.compactHex }
    public var description: String { hex }
    public static func < (lhs: ReplicaID, rhs: ReplicaID) -> Bool { lhs.bits < rhs.bits }
}

/// A stroke's identity: the UUID its drawing app gave it.
public struct StrokeID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var bits: UUIDBits
    public init(_ bits: UUIDBits) { self.bits = bits }
    public init?(uuidString: some StringProtocol) {
        guard let bits = UUIDBits(parsing: uuidString) else { return nil }
        self.bits = bits
    }
    /// A new random stroke id (a version 4 UUID), for an app that starts a stroke.
    public init() {
        var bits = UUIDBits.random()
        // Version 4, variant 1, as Foundation's UUID() makes them.
        bits = UUIDBits(high: bits.high & ~0xF000 | 0x4000, low: bits.low & ~(0xC << 60) | (0x8 << 60))
        self.bits = bits
    }
    /// The 16 bytes of a UUID in network order: Foundation's `UUID.uuid` (`uuid_t`), so an app
    /// writes `StrokeID(uuid: someUUID.uuid)` without this library depending on Foundation.
    public init(uuid bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                             UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)) {
        self.bits = withUnsafeBytes(of: bytes) { UUIDBits(bytes: Array($0)) }
    }
    public var uuidString: String { bits.uuidString }
    public var description: String { uuidString }
    public static func < (lhs: StrokeID, rhs: StrokeID) -> Bool { lhs.bits < rhs.bits }
}

/// Stroke ids for one drawing client that cost a block almost nothing: a prefix drawn at
/// random once, then a counter (`next()`). A block's stroke table keeps 16 bytes per stroke
/// (docs/FORMAT.md §6.1); random ids are incompressible, while ids that share their first 15
/// bytes with the entry before deflate to about two bytes. On short strokes that is most of
/// the difference: Hershey handwriting (about 21 points a stroke) took 4.12 B/pt with random
/// ids and 3.45 with ids of this shape (docs/PERFORMANCE.md, the Hershey rows).
///
/// The ids are RFC 9562 version 8 UUIDs: 60 random bits of prefix, variant 1, and 62 bits
/// of counter. Two allocators give the same id only if their prefixes are equal, about one
/// chance in 2^60 per pair (a million allocators on one board: 4 × 10^-7), so an app makes
/// one per drawing session, not one per stroke. Not for ids that must not reveal the order
/// in which one client made them. A value type: a copy hands out the ids the original will,
/// so keep one and pass it `inout`.
public struct StrokeIDAllocator: Sendable {
    private let prefix: UInt64
    private var counter: UInt64 = 0

    public init() {
        var generator = SystemRandomNumberGenerator()
        self.init(prefix: generator.next())
    }

    /// A prefix of the caller's (its version bits are set here): for tests and replays that
    /// must be repeatable.
    public init(prefix: UInt64) {
        self.prefix = prefix & ~0xF000 | 0x8000
    }

    /// The next id: the counter in the low 62 bits, after the variant bits.
    public mutating func next() -> StrokeID {
        counter = (counter &+ 1) & Self.counterMask
        return StrokeID(UUIDBits(high: prefix, low: Self.variant | counter))
    }

    static let variant: UInt64 = 0x8 << 60
    static let counterMask: UInt64 = (1 << 62) - 1
}

/// Names one event everywhere: its replica and its dense sequence number (from 1).
public struct EventID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var replica: ReplicaID
    public var seq: UInt64
    public init(replica: ReplicaID, seq: UInt64) {
        self.replica = replica
        self.seq = seq
    }
    public var description: String { "\(replica.hex)#\(seq)" }
    public static func < (lhs: EventID, rhs: EventID) -> Bool {
        (lhs.replica, lhs.seq) < (rhs.replica, rhs.seq)
    }
}
