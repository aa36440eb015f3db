import JournalFormat

/// A total order on event contents, used only to pick one variant of a forked event id the
/// same way on every machine: envelope first, then payload fields by bit pattern.
public enum EventOrdering {
    public static func canonicalLess(_ lhs: Event, _ rhs: Event) -> Bool {
        canonicalBytes(lhs).lexicographicallyPrecedes(canonicalBytes(rhs))
    }

    /// Big-endian, fixed-width fields so that byte order is numeric order.
    public static func canonicalBytes(_ event: Event) -> [UInt8] {
        var bytes: [UInt8] = []
        func put(_ value: UInt64) { for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) } }
        put(event.lamport)
        put(UInt64(bitPattern: event.wallTime) ^ (1 << 63))
        bytes.append(event.payload.kind.rawValue)
        if let stroke = event.payload.stroke { bytes.append(contentsOf: stroke.bits.bytes) }
        if case .point(let sample) = event.payload {
            put(sample.x.bitPattern)
            put(sample.y.bitPattern)
            bytes.append(sample.pressure == nil ? 0 : 1)
            put(sample.pressure?.bitPattern ?? 0)
            bytes.append(sample.t == nil ? 0 : 1)
            put(sample.t?.bitPattern ?? 0)
            put(UInt64(sample.style.color.rawValue))
            put(sample.style.width.bitPattern)
        }
        return bytes
    }
}
