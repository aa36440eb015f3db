/// Encodes a run of one replica's events (dense seqs) into the raw, uncompressed body of a
/// block, and back. Pure: no I/O, no compression. Layout: docs/FORMAT.md, "Block body".
///
/// Columns instead of rows, because deflate then sees long runs of alike bytes: the kind,
/// clock and stroke columns of a pen stroke are nearly constant and cost almost nothing, so
/// the size is dominated by the coordinate residuals.
public enum BlockCodec {
    // MARK: Encoding

    /// `version`: one of `FormatVersion.drawing`; v2 and v3 (whose bodies are v2's) code
    /// references as differences and real columns with `RealColumnEncoderV2`, and v6 and v7
    /// may range-code their streams (§18).
    public static func encode(_ events: some Collection<Event>, version: UInt16 = FormatVersion.current) -> [UInt8] {
        encodeBody(events, version: version).bytes
    }

    /// The body with where each of its parts ends, for a deflate that treats each part its
    /// own way (`EncodedBody.deflateSections`).
    public static func encodeBody(_ events: some Collection<Event>, version: UInt16 = FormatVersion.current) -> EncodedBody {
        encodeBody(events, version: version, rangeCoding: FormatVersion.rangeCoded(version) ? .whenSmaller : .never)
    }

    /// `rangeCoding`: `.always` only for test vectors, and only in a version that allows it.
    package static func encodeBody(
        _ events: some Collection<Event>, version: UInt16, rangeCoding: RangeCodedStream.Policy
    ) -> EncodedBody {
        precondition(FormatVersion.drawing.contains(version), "no encoder for format version \(version)")
        precondition(rangeCoding == .never || FormatVersion.rangeCoded(version), "version \(version) has no range-coded streams")
        let differences = version >= FormatV2.version
        var strokeIndex: [StrokeID: UInt32] = [:]
        var strokes: [StrokeID] = []
        var styleIndex: [Style: UInt32] = [:]
        var styles: [Style] = []

        var kinds = ByteWriter(capacity: events.count)
        var lamports = ByteWriter(capacity: events.count)
        var walls = ByteWriter(capacity: events.count)
        var strokeRefs = ByteWriter(capacity: events.count)
        var styleRefs = ByteWriter(capacity: events.count)
        var flags = ByteWriter(capacity: events.count)
        var xs = RealColumnBuilder(order: 2, capacity: events.count)
        var ys = RealColumnBuilder(order: 2, capacity: events.count)
        var pressures = RealColumnBuilder(order: 1, capacity: events.count)
        var times = RealColumnBuilder(order: 2, capacity: events.count)

        var previousLamport: UInt64 = 0
        var previousWall: Int64 = 0
        var lastStroke: (id: StrokeID, ref: UInt32)?
        var lastStyle: (style: Style, ref: UInt32)?
        var previousStrokeRef: UInt32 = 0
        var previousStyleRef: UInt32 = 0
        for event in events {
            kinds.append(event.payload.kind.rawValue)
            lamports.appendZigZag(Int64(bitPattern: event.lamport &- previousLamport &- 1))
            walls.appendZigZag(event.wallTime &- previousWall)
            previousLamport = event.lamport
            previousWall = event.wallTime

            guard let stroke = event.payload.stroke else { continue }
            // Points come in runs of one stroke and style: hash only when they change.
            let strokeRef: UInt32
            if let last = lastStroke, last.id == stroke {
                strokeRef = last.ref
            } else if let known = strokeIndex[stroke] {
                strokeRef = known
            } else {
                strokeRef = UInt32(strokes.count)
                strokeIndex[stroke] = strokeRef
                strokes.append(stroke)
            }
            lastStroke = (stroke, strokeRef)
            if differences {
                strokeRefs.appendZigZag(Int64(strokeRef) - Int64(previousStrokeRef))
                previousStrokeRef = strokeRef
            } else {
                strokeRefs.appendVarint(UInt64(strokeRef))
            }

            guard case .point(let sample) = event.payload else { continue }
            let styleRef: UInt32
            if let last = lastStyle, last.style == sample.style {
                styleRef = last.ref
            } else if let known = styleIndex[sample.style] {
                styleRef = known
            } else {
                styleRef = UInt32(styles.count)
                styleIndex[sample.style] = styleRef
                styles.append(sample.style)
            }
            lastStyle = (sample.style, styleRef)
            if differences {
                styleRefs.appendZigZag(Int64(styleRef) - Int64(previousStyleRef))
                previousStyleRef = styleRef
            } else {
                styleRefs.appendVarint(UInt64(styleRef))
            }
            flags.append((sample.pressure != nil ? 1 : 0) | (sample.t != nil ? 2 : 0))
            xs.append(sample.x, stroke: strokeRef)
            ys.append(sample.y, stroke: strokeRef)
            if let pressure = sample.pressure { pressures.append(pressure, stroke: strokeRef) }
            if let t = sample.t { times.append(t, stroke: strokeRef) }
        }

        var out = ByteWriter(capacity: events.count * 12 + strokes.count * 16 + 64)
        var lowBytes: [Range<Int>] = []
        var partEnds: [Int] = []
        partEnds.reserveCapacity(EncodedBody.Part.allCases.count)
        out.appendVarint(UInt64(strokes.count))
        for stroke in strokes { out.append(contentsOf: stroke.bits.bytes) }
        out.appendVarint(UInt64(styles.count))
        for style in styles {
            out.appendLE(style.color.rawValue)
            out.appendLE(style.width.bitPattern)
        }
        partEnds.append(out.count)
        for column in [kinds, lamports, walls, strokeRefs, styleRefs, flags] {
            out.append(contentsOf: column.bytes)
            partEnds.append(out.count)
        }
        for (column, part) in [(xs, EncodedBody.Part.x), (ys, .y), (pressures, .pressure), (times, .t)] {
            if differences {
                RealColumnEncoderV2(values: column.values, strokes: column.strokes, strokeCount: strokes.count,
                                    rangeCoding: rangeCoding,
                                    lowFormDeflate: EncodedBody.method(part, level: SegmentEncoder.compressionLevel))
                    .write(to: &out, lowBytes: &lowBytes)
            } else {
                column.write(to: &out, strokeCount: strokes.count)
            }
            partEnds.append(out.count)
        }
        return EncodedBody(bytes: out.bytes, partEnds: partEnds, lowBytes: lowBytes)
    }

    // MARK: Decoding

    /// Decodes a block body into events named `(replica, firstSeq + i)`.
    public static func decode(
        _ raw: UnsafeRawBufferPointer, replica: ReplicaID, firstSeq: UInt64, eventCount: Int,
        version: UInt16 = FormatVersion.current
    ) throws(DecodeError) -> [Event] {
        try decodeColumns(raw, firstSeq: firstSeq, eventCount: eventCount, version: version).events(replica: replica)
    }

    /// Decodes a block body into its columns, without building one value per event: what
    /// replay folds from directly.
    public static func decodeColumns(
        _ raw: UnsafeRawBufferPointer, firstSeq: UInt64, eventCount: Int, version: UInt16 = FormatVersion.current
    ) throws(DecodeError) -> BlockColumns {
        guard FormatVersion.drawing.contains(version) else {
            throw .malformed(offset: 0, reason: FormatVersion.membership.contains(version)
                ? "a version \(version) block holds membership statements, not drawing events"
                : "no block body decoder for format version \(version)")
        }
        let differences = version >= FormatV2.version
        let rangeCoded = FormatVersion.rangeCoded(version)
        var reader = ByteReader(raw)
        let strokeCount = try reader.readCount(minimumItemSize: 16, what: "stroke table")
        var strokes: [StrokeID] = []
        strokes.reserveCapacity(strokeCount)
        for _ in 0..<strokeCount {
            strokes.append(StrokeID(UUIDBits(bytes: try reader.readBytes(16))))
        }
        let styleCount = try reader.readCount(minimumItemSize: 12, what: "style table")
        var styles: [Style] = []
        styles.reserveCapacity(styleCount)
        for _ in 0..<styleCount {
            let color = try reader.readLE(UInt32.self)
            let width = Double(bitPattern: try reader.readLE(UInt64.self))
            styles.append(Style(color: RGBA(rawValue: color), width: width))
        }

        guard reader.remaining >= eventCount else {
            throw .truncated(offset: reader.offset, needed: "\(eventCount) event kinds")
        }
        let kindsStart = reader.offset
        var kinds = [EventKind](repeating: .clear, count: eventCount)
        var strokeEventCount = 0
        var pointCount = 0
        for index in 0..<eventCount {
            let tag = try reader.readByte()
            guard let kind = EventKind(rawValue: tag) else {
                throw .malformed(offset: kindsStart + index, reason: "unknown event kind \(tag)")
            }
            kinds[index] = kind
            if kind != .clear { strokeEventCount += 1 }
            if kind == .point { pointCount += 1 }
        }

        var lamports = [UInt64](repeating: 0, count: eventCount)
        var previousLamport: UInt64 = 0
        for index in 0..<eventCount {
            let start = reader.offset
            let lamport = previousLamport &+ UInt64(bitPattern: try reader.readZigZag()) &+ 1
            guard lamport >= 1, lamport < FormatV1.maxLamport else {
                throw .malformed(offset: start, reason: "lamport clock \(lamport) out of range")
            }
            lamports[index] = lamport
            previousLamport = lamport
        }
        var walls = [Int64](repeating: 0, count: eventCount)
        var previousWall: Int64 = 0
        for index in 0..<eventCount {
            previousWall = previousWall &+ (try reader.readZigZag())
            walls[index] = previousWall
        }
        // One reference, as v1 stores it (the index) or v2 (the difference from the previous).
        func readReference(_ previous: inout Int64, tableCount: Int, what: String) throws(DecodeError) -> UInt32 {
            let start = reader.offset
            let ref: UInt64
            if differences {
                let (sum, overflow) = previous.addingReportingOverflow(try reader.readZigZag())
                guard !overflow, sum >= 0 else { throw .malformed(offset: start, reason: "\(what) reference below 0") }
                ref = UInt64(sum)
                previous = sum
            } else {
                ref = try reader.readVarint()
            }
            guard ref < UInt64(tableCount) else {
                throw .malformed(offset: start, reason: "\(what) reference \(ref) beyond table of \(tableCount)")
            }
            return UInt32(ref)
        }
        // Stroke refs are stored for non-clear events only; spread them per event.
        var strokeRefs = [UInt32](repeating: 0, count: eventCount)
        var previousStrokeRef: Int64 = 0
        for index in 0..<eventCount where kinds[index] != .clear {
            strokeRefs[index] = try readReference(&previousStrokeRef, tableCount: strokeCount, what: "stroke")
        }
        var styleRefs = [UInt32](repeating: 0, count: pointCount)
        var previousStyleRef: Int64 = 0
        for index in 0..<pointCount {
            styleRefs[index] = try readReference(&previousStyleRef, tableCount: styleCount, what: "style")
        }
        var pointFlags = [UInt8](repeating: 0, count: pointCount)
        var pressureCount = 0
        var timeCount = 0
        for index in 0..<pointCount {
            let start = reader.offset
            let flag = try reader.readByte()
            guard flag & ~3 == 0 else { throw .malformed(offset: start, reason: "unknown point flags \(flag)") }
            pointFlags[index] = flag
            if flag & 1 != 0 { pressureCount += 1 }
            if flag & 2 != 0 { timeCount += 1 }
        }

        // Stroke refs of points only, to drive the per-stroke predictors.
        var pointStrokes = [UInt32](repeating: 0, count: pointCount)
        var pressureStrokes: [UInt32] = []
        pressureStrokes.reserveCapacity(pressureCount)
        var timeStrokes: [UInt32] = []
        timeStrokes.reserveCapacity(timeCount)
        var pointCursor = 0
        for index in 0..<eventCount where kinds[index] == .point {
            let ref = strokeRefs[index]
            pointStrokes[pointCursor] = ref
            if pointFlags[pointCursor] & 1 != 0 { pressureStrokes.append(ref) }
            if pointFlags[pointCursor] & 2 != 0 { timeStrokes.append(ref) }
            pointCursor += 1
        }
        func column(_ strokes: [UInt32]) throws(DecodeError) -> [Double] {
            differences
                ? try RealColumnDecoderV2.decode(&reader, strokes: strokes, strokeCount: strokeCount, rangeCoded: rangeCoded)
                : try RealColumnDecoder.decode(&reader, strokes: strokes, strokeCount: strokeCount)
        }
        let xs = try column(pointStrokes)
        let ys = try column(pointStrokes)
        let pressureValues = try column(pressureStrokes)
        let timeValues = try column(timeStrokes)
        guard reader.isAtEnd else {
            throw .malformed(offset: reader.offset, reason: "\(reader.remaining) unexpected bytes after the last column")
        }

        // Optional fields spread per point, NaN for absent (never a recorded value: the
        // reader refuses non-finite values after decoding).
        var pressures = [Double](repeating: .nan, count: pointCount)
        var times = [Double](repeating: .nan, count: pointCount)
        var pressureCursor = 0
        var timeCursor = 0
        for index in 0..<pointCount {
            let flag = pointFlags[index]
            if flag & 1 != 0 { pressures[index] = pressureValues[pressureCursor]; pressureCursor += 1 }
            if flag & 2 != 0 { times[index] = timeValues[timeCursor]; timeCursor += 1 }
        }
        return BlockColumns(
            firstSeq: firstSeq, strokes: strokes, styles: styles, kinds: kinds, lamports: lamports, walls: walls,
            strokeRefs: strokeRefs, styleRefs: styleRefs, pointFlags: pointFlags, xs: xs, ys: ys,
            pressures: pressures, times: times)
    }
}

/// A decoded block, column by column: event `i` has seq `firstSeq + i`; point columns are
/// indexed by the point's rank among the block's points.
public struct BlockColumns: Sendable {
    public var firstSeq: UInt64
    public var strokes: [StrokeID]
    public var styles: [Style]
    public var kinds: [EventKind]
    public var lamports: [UInt64]
    public var walls: [Int64]
    /// Per event, an index into `strokes` (0 for `clear`, which names no stroke).
    public var strokeRefs: [UInt32]
    /// Per point, an index into `styles`.
    public var styleRefs: [UInt32]
    /// Per point: bit 0 pressure present, bit 1 t present.
    public var pointFlags: [UInt8]
    public var xs: [Double]
    public var ys: [Double]
    /// Per point; NaN where the point has no pressure.
    public var pressures: [Double]
    /// Per point; NaN where the point has no t.
    public var times: [Double]

    public var count: Int { kinds.count }
    public var pointCount: Int { xs.count }

    public func events(replica: ReplicaID) -> [Event] {
        var events: [Event] = []
        events.reserveCapacity(count)
        var point = 0
        for index in 0..<count {
            let id = EventID(replica: replica, seq: firstSeq + UInt64(index))
            let stroke = strokes.isEmpty ? nil : strokes[Int(strokeRefs[index])]
            let payload: Payload
            switch kinds[index] {
            case .clear: payload = .clear
            case .point:
                let flag = pointFlags[point]
                payload = .point(PointSample(
                    stroke: stroke!, x: xs[point], y: ys[point],
                    pressure: flag & 1 != 0 ? pressures[point] : nil, t: flag & 2 != 0 ? times[point] : nil,
                    style: styles[Int(styleRefs[point])]))
                point += 1
            case .end: payload = .end(stroke!)
            case .undo: payload = .undo(stroke!)
            case .redo: payload = .redo(stroke!)
            case .erase: payload = .erase(stroke!)
            }
            events.append(Event(id: id, lamport: lamports[index], wallTime: walls[index], payload: payload))
        }
        return events
    }

    /// Refuses values no writer may record (invariant 8): non-finite numbers, negative widths.
    public func validate() throws(DecodeError) {
        for index in 0..<pointCount {
            guard xs[index].isFinite, ys[index].isFinite else {
                throw .malformed(offset: 0, reason: "point \(index): coordinates must be finite")
            }
            if pointFlags[index] & 1 != 0, !pressures[index].isFinite {
                throw .malformed(offset: 0, reason: "point \(index): pressure must be finite")
            }
            if pointFlags[index] & 2 != 0, !times[index].isFinite {
                throw .malformed(offset: 0, reason: "point \(index): t must be finite")
            }
        }
        for style in styles where !(style.width.isFinite && style.width >= 0) {
            throw .malformed(offset: 0, reason: "style width \(style.width) must be finite and not negative")
        }
    }
}

extension BlockColumns {
    /// Columns of a dense run of one replica's events (seqs `first...first+count-1`).
    public init(events: ArraySlice<Event>) {
        firstSeq = events.first?.id.seq ?? 1
        strokes = []; styles = []; kinds = []; lamports = []; walls = []; strokeRefs = []
        styleRefs = []; pointFlags = []; xs = []; ys = []; pressures = []; times = []
        var strokeIndex: [StrokeID: UInt32] = [:]
        var styleIndex: [Style: UInt32] = [:]
        for event in events {
            kinds.append(event.payload.kind)
            lamports.append(event.lamport)
            walls.append(event.wallTime)
            var ref: UInt32 = 0
            if let stroke = event.payload.stroke {
                ref = strokeIndex[stroke] ?? {
                    strokes.append(stroke)
                    strokeIndex[stroke] = UInt32(strokes.count - 1)
                    return UInt32(strokes.count - 1)
                }()
            }
            strokeRefs.append(ref)
            guard case .point(let sample) = event.payload else { continue }
            let styleRef = styleIndex[sample.style] ?? {
                styles.append(sample.style)
                styleIndex[sample.style] = UInt32(styles.count - 1)
                return UInt32(styles.count - 1)
            }()
            styleRefs.append(styleRef)
            pointFlags.append((sample.pressure != nil ? 1 : 0) | (sample.t != nil ? 2 : 0))
            xs.append(sample.x)
            ys.append(sample.y)
            pressures.append(sample.pressure ?? .nan)
            times.append(sample.t ?? .nan)
        }
    }
}

// MARK: - Real columns

/// A column of Doubles stored as integers on a decimal grid (value = n / 10^scale), predicted
/// per stroke from the previous one (order 1) or two (order 2) values; the residuals are
/// zigzag varints. Any value the grid cannot reproduce bit for bit (-0.0, subnormals, more
/// digits than the scale) is an exception stored as its raw 64 bits: lossless, never rounded.
struct RealColumnBuilder {
    let order: UInt8
    private(set) var values: [Double] = []
    private(set) var strokes: [UInt32] = []

    /// `capacity`: the entries the block can hold at most (its event count), reserved at once:
    /// a 32,768-event block grew each column 15 times, copying it each time.
    init(order: UInt8, capacity: Int = 0) {
        self.order = order
        values.reserveCapacity(capacity)
        strokes.reserveCapacity(capacity)
    }

    mutating func append(_ value: Double, stroke: UInt32) {
        values.append(value)
        strokes.append(stroke)
    }

    func write(to out: inout ByteWriter, strokeCount: Int) {
        let scale = RealGrid.smallestScale(values)
        out.append(scale)
        out.append(order)
        var predictors = [Predictor](repeating: Predictor(), count: strokeCount)
        var exceptions: [Int] = []
        for (index, value) in values.enumerated() {
            let ref = Int(strokes[index])
            let predicted = predictors[ref].predict(order: order)
            let integer: Int64
            if let onGrid = RealGrid.integer(value, scale: scale) {
                integer = onGrid
            } else {
                exceptions.append(index)
                integer = predicted
            }
            out.appendZigZag(integer &- predicted)
            predictors[ref].advance(integer)
        }
        out.appendVarint(UInt64(exceptions.count))
        var previous = -1
        for index in exceptions {
            out.appendVarint(UInt64(index - previous - 1))
            out.appendLE(values[index].bitPattern)
            previous = index
        }
    }
}

enum RealColumnDecoder {
    static func decode(
        _ reader: inout ByteReader, strokes: [UInt32], strokeCount: Int
    ) throws(DecodeError) -> [Double] {
        let headerOffset = reader.offset
        let scale = try reader.readByte()
        let order = try reader.readByte()
        guard scale <= FormatV1.maxDecimalScale else {
            throw .malformed(offset: headerOffset, reason: "decimal scale \(scale) above \(FormatV1.maxDecimalScale)")
        }
        guard order == 1 || order == 2 else {
            throw .malformed(offset: headerOffset + 1, reason: "predictor order \(order) is not 1 or 2")
        }
        let divisor = FormatV1.powersOfTen[Int(scale)]
        var predictors = [Predictor](repeating: Predictor(), count: strokeCount)
        var values = [Double](repeating: 0, count: strokes.count)
        for index in 0..<strokes.count {
            let ref = Int(strokes[index])
            let integer = predictors[ref].predict(order: order) &+ (try reader.readZigZag())
            predictors[ref].advance(integer)
            values[index] = Double(integer) / divisor
        }
        let exceptionsOffset = reader.offset
        let exceptionCount = try reader.readCount(minimumItemSize: 9, what: "exception")
        guard exceptionCount <= strokes.count else {
            throw .malformed(offset: exceptionsOffset, reason: "\(exceptionCount) exceptions in a column of \(strokes.count)")
        }
        var index = -1
        for _ in 0..<exceptionCount {
            let start = reader.offset
            let gap = try reader.readVarint()
            guard gap < UInt64(strokes.count) else {
                throw .malformed(offset: start, reason: "exception index beyond the column")
            }
            index += Int(gap) + 1
            guard index < strokes.count else {
                throw .malformed(offset: start, reason: "exception index \(index) beyond the column of \(strokes.count)")
            }
            values[index] = Double(bitPattern: try reader.readLE(UInt64.self))
        }
        return values
    }
}

struct Predictor {
    var previous: Int64 = 0
    var previousDelta: Int64 = 0
    var seen = false

    @inline(__always)
    func predict(order: UInt8) -> Int64 {
        guard seen else { return 0 }
        return order == 2 ? previous &+ previousDelta : previous
    }

    @inline(__always)
    mutating func advance(_ value: Int64) {
        previousDelta = seen ? value &- previous : 0
        previous = value
        seen = true
    }
}

public enum RealGrid {
    /// The smallest scale at which the most values are exact: each value's own smallest exact
    /// scale (at most `FormatV1.maxDecimalScale`), maximised over the column. Values no scale
    /// reproduces are left to exceptions. Block columns and snapshots both choose with it.
    /// `narrow`: the grid of float32 values, `Float(n / 10^scale)` (format v2).
    public static func smallestScale(_ values: [Double], narrow: Bool = false) -> UInt8 {
        var scale: UInt8 = 0
        for value in values where integer(value, scale: scale, narrow: narrow) == nil {
            if let finer = finerScale(for: value, above: scale, narrow: narrow) { scale = finer.scale }
        }
        return scale
    }

    /// The first scale above `scale` on whose grid `value` is, with its integer there.
    private static func finerScale(for value: Double, above scale: UInt8, narrow: Bool = false) -> (scale: UInt8, integer: Int64)? {
        var candidate = scale + 1
        while candidate <= FormatV1.maxDecimalScale {
            if let n = integer(value, scale: candidate, narrow: narrow) { return (candidate, n) }
            candidate += 1
        }
        return nil
    }

    /// `smallestScale` and every value's integer at that scale, in one pass, when every value
    /// has one (nil otherwise: some value is an exception there, and the caller measures the
    /// column the long way). The integers are those `integer(_:scale:)` gives at the final
    /// scale: values read before the scale last grew are converted again.
    public static func decimalIntegers(_ values: [Double]) -> (scale: UInt8, integers: [Int64])? {
        var scale: UInt8 = 0
        var integers = [Int64]()
        integers.reserveCapacity(values.count)
        for value in values {
            if let n = integer(value, scale: scale) {
                integers.append(n)
                continue
            }
            guard let finer = finerScale(for: value, above: scale) else { return nil }
            scale = finer.scale
            for index in integers.indices {
                guard let n = integer(values[index], scale: scale) else { return nil }
                integers[index] = n
            }
            integers.append(finer.integer)
        }
        return (scale, integers)
    }

    /// The integer n with n / 10^scale == value bit for bit, if there is one within ±2^53.
    @inline(__always)
    public static func integer(_ value: Double, scale: UInt8, narrow: Bool = false) -> Int64? {
        let power = FormatV1.powersOfTen[Int(scale)]
        guard let integer = ExactReal.nearestInteger(value * power) else { return nil }
        let onGrid = Double(integer) / power
        guard (narrow ? Double(Float(onGrid)) : onGrid).bitPattern == value.bitPattern else { return nil }
        return integer
    }
}
