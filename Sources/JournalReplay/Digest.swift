import JournalFormat

extension Drawing {
    /// SHA-256 over the canonical encoding of the drawing (docs/FORMAT.md, "Digest"): equal on
    /// every machine that holds the same set of events (invariant 3).
    public var digest: String {
        var hasher = SHA256()
        hasher.update(Array("StrokeJournal drawing v1\n".utf8))
        hasher.update(littleEndian: UInt64(strokes.count))
        for stroke in strokes {
            hasher.update(stroke.id.bits.bytes)
            hasher.update([stroke.visible ? 1 : 0, stroke.ended ? 1 : 0])
            hasher.update(littleEndian: UInt64(stroke.points.count))
            for (index, point) in stroke.points.enumerated() {
                let style = stroke.style(ofPoint: index)
                let pressure = point.pressure
                let t = point.t
                hasher.update([(pressure != nil ? 1 : 0) | (t != nil ? 2 : 0)])
                hasher.update(littleEndian: point.x.bitPattern)
                hasher.update(littleEndian: point.y.bitPattern)
                if let pressure { hasher.update(littleEndian: pressure.bitPattern) }
                if let t { hasher.update(littleEndian: t.bitPattern) }
                hasher.update(littleEndian: style.color.rawValue)
                hasher.update(littleEndian: style.width.bitPattern)
            }
        }
        return SHA256.hex(hasher.finalize())
    }
}
