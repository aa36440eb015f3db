import JournalFormat
import JournalPlatform

/// A small deterministic PRNG (SplitMix64) so failing seeds can be replayed.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Builds plausible and hostile event streams for one replica.
public struct EventGenerator {
    public var random: SeededGenerator
    public let replica: ReplicaID
    public private(set) var nextSeq: UInt64 = 1
    public private(set) var lamport: UInt64 = 0
    public var wallTime: Int64 = 1_790_000_000_000
    public private(set) var strokes: [StrokeID] = []

    public init(seed: UInt64, replica: ReplicaID? = nil) {
        random = SeededGenerator(seed: seed)
        var idRandom = SeededGenerator(seed: seed ^ 0xA5A5_A5A5)
        self.replica = replica ?? ReplicaID(UUIDBits(high: idRandom.next(), low: idRandom.next()))
    }

    public mutating func newStroke() -> StrokeID {
        let id = StrokeID(UUIDBits(high: random.next(), low: random.next()))
        strokes.append(id)
        return id
    }

    public mutating func event(_ payload: Payload, lamportJump: UInt64 = 1) -> Event {
        lamport += lamportJump
        wallTime += Int64.random(in: 0...20, using: &random)
        defer { nextSeq += 1 }
        return Event(id: EventID(replica: replica, seq: nextSeq), lamport: lamport, wallTime: wallTime, payload: payload)
    }

    /// A pen stroke of `count` points on a 2-decimal grid, then its end.
    public mutating func stroke(points count: Int, style: Style? = nil) -> [Event] {
        let id = newStroke()
        let style = style ?? Style(color: RGBA(rawValue: UInt32.random(in: 0...UInt32.max, using: &random)),
                                   width: Double(Int.random(in: 1...24, using: &random)))
        var x = Double(Int.random(in: 10_000...90_000, using: &random)) / 100
        var y = Double(Int.random(in: 10_000...70_000, using: &random)) / 100
        var events: [Event] = []
        for index in 0..<count {
            x = ((x + Double(Int.random(in: -500...500, using: &random)) / 100) * 100).rounded() / 100
            y = ((y + Double(Int.random(in: -500...500, using: &random)) / 100) * 100).rounded() / 100
            let pressure = Double(Int.random(in: 5...100, using: &random)) / 100
            let t = Double(index * 8) / 1000
            events.append(event(.point(PointSample(stroke: id, x: x, y: y, pressure: pressure, t: t, style: style))))
        }
        events.append(event(.end(id)))
        return events
    }

    /// Any payload at all, with Doubles drawn from the nastiest corners of the format.
    public mutating func arbitraryEvent() -> Event {
        let stroke = strokes.isEmpty || Bool.random(using: &random) ? newStroke() : strokes.randomElement(using: &random)!
        let kind = Int.random(in: 0..<10, using: &random)
        let payload: Payload
        switch kind {
        case 0: payload = .end(stroke)
        case 1: payload = .undo(stroke)
        case 2: payload = .redo(stroke)
        case 3: payload = .erase(stroke)
        case 4: payload = .clear
        default:
            payload = .point(PointSample(
                stroke: stroke, x: arbitraryDouble(), y: arbitraryDouble(),
                pressure: Bool.random(using: &random) ? arbitraryDouble() : nil,
                t: Bool.random(using: &random) ? arbitraryDouble() : nil,
                style: Style(color: RGBA(rawValue: UInt32.random(in: 0...UInt32.max, using: &random)),
                             width: abs(arbitraryDouble()))))
        }
        return event(payload, lamportJump: UInt64.random(in: 1...3, using: &random))
    }

    public mutating func arbitraryDouble() -> Double {
        switch Int.random(in: 0..<12, using: &random) {
        case 0: return -0.0
        case 1: return 0.0
        case 2: return Double.leastNonzeroMagnitude * Double(Int.random(in: 1...1000, using: &random))
        case 3: return -Double.leastNormalMagnitude / 3
        case 4: return Double.greatestFiniteMagnitude * (Bool.random(using: &random) ? 1 : -1)
        case 5: return Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF) * (Bool.random(using: &random) ? 1 : -1)
        case 6: return Double(Int64.random(in: -(1 << 53)...(1 << 53), using: &random))
        case 7: return Double(Int.random(in: -100_000...100_000, using: &random)) / 100
        case 8: return Double(Int.random(in: -1_000_000...1_000_000, using: &random)) / 1000
        case 9: return 0.1 + 0.2
        case 10: return Double(Int.random(in: -999_999_999...999_999_999, using: &random)) / 1e9
        default: return Double.random(in: -1e6...1e6, using: &random)
        }
    }
}

/// Byte-level damage, after LevelDB's log_test helpers.
public enum Damage {
    public static func flipByte(_ bytes: [UInt8], at offset: Int, mask: UInt8 = 0x01) -> [UInt8] {
        var copy = bytes
        copy[offset] ^= mask
        return copy
    }

    public static func truncate(_ bytes: [UInt8], at length: Int) -> [UInt8] {
        Array(bytes.prefix(length))
    }

    public static func appendGarbage(_ bytes: [UInt8], count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededGenerator(seed: seed)
        return bytes + (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }
}

/// A fresh directory under the system temporary folder, removed by `remove()`.
public struct TemporaryDirectory {
    public let path: String

    public init(_ label: String = "sj") {
        let base = ProcessInfoLite.environment("TMPDIR") ?? "/tmp"
        let suffix = ProcessInfoLite.randomBytes(6).map { String($0, radix: 16) }.joined()
        path = base + "/" + label + "-" + suffix
        try? FileSystem.createDirectory(path)
    }

    public func remove() {
        removeTree(path)
    }

    private func removeTree(_ path: String) {
        if let entries = try? FileSystem.list(path) {
            for entry in entries {
                let child = path + "/" + entry.name
                if entry.kind == .directory { removeTree(child) } else { try? FileSystem.remove(child) }
            }
        }
        _ = try? FileSystem.removeDirectory(path)
    }
}
