#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalFormat
import JournalIngest
import JournalTestSupport
import Testing

let strokeText = "6F1C2B9A-0B6D-4D9A-9E41-2A7F3C1D5E88"
let stroke = StrokeID(uuidString: strokeText)!

/// The error a line gives, or nil when it parses.
func lineError(_ line: String) -> LineError? {
    do {
        _ = try LineParser.parse(line)
        return nil
    } catch {
        return error
    }
}

func lineError(bytes: [UInt8]) -> LineError? {
    do {
        _ = try LineParser.parse(bytes)
        return nil
    } catch {
        return error
    }
}

/// Expects `line` to be refused with a reason that contains every fragment.
func expectRefused(_ line: String, _ fragments: String..., sourceLocation: SourceLocation = #_sourceLocation) {
    guard let error = lineError(line) else {
        Issue.record("expected \(line) to be refused", sourceLocation: sourceLocation)
        return
    }
    for fragment in fragments {
        #expect(error.reason.contains(fragment), "reason \"\(error.reason)\" lacks \"\(fragment)\" (line \(line))",
                sourceLocation: sourceLocation)
    }
}

/// The payloads of a line that must parse.
func parsed(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) -> [Payload] {
    do {
        return try LineParser.parse(line)
    } catch {
        Issue.record("\(line) was refused: \(error)", sourceLocation: sourceLocation)
        return []
    }
}

/// A file under /tmp with the given bytes, removed by `remove()`.
struct TemporaryFile {
    let path: String

    init(_ bytes: [UInt8]) {
        var template = Array("/tmp/journal-ingest-test-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        precondition(descriptor >= 0, "mkstemp failed")
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, bytes.count - offset) }
            precondition(written > 0, "write failed")
            offset += written
        }
        close(descriptor)
    }

    init(_ text: String) { self.init(Array(text.utf8)) }

    func remove() { unlink(path) }
}

/// Reads everything from a reader: line numbers with payloads, or errors, in order.
enum ReadItem: Equatable {
    case line(Int, [Payload])
    case error(InputError)
}

func readAll(_ reader: inout NDJSONReader, limit: Int = 1_000_000) -> [ReadItem] {
    var items: [ReadItem] = []
    while items.count < limit {
        do {
            guard let (line, payloads) = try reader.next() else { break }
            items.append(.line(line, payloads))
        } catch {
            items.append(.error(error))
        }
    }
    return items
}

func readAll(
    file bytes: [UInt8], maxLineLength: Int = LineParser.maxLineLength, readSize: Int = NDJSONReader.chunkSize
) -> [ReadItem] {
    let file = TemporaryFile(bytes)
    defer { file.remove() }
    do {
        var reader = try NDJSONReader(path: file.path, maxLineLength: maxLineLength, readSize: readSize)
        return readAll(&reader)
    } catch {
        Issue.record("cannot open \(file.path): \(error)")
        return []
    }
}

func readAll(
    file text: String, maxLineLength: Int = LineParser.maxLineLength, readSize: Int = NDJSONReader.chunkSize
) -> [ReadItem] {
    readAll(file: Array(text.utf8), maxLineLength: maxLineLength, readSize: readSize)
}

func point(
    _ id: StrokeID = stroke, x: Double, y: Double, pressure: Double? = nil, t: Double? = nil,
    color: UInt32 = 0x0000_00FF, width: Double = 2.0
) -> Payload {
    .point(PointSample(stroke: id, x: x, y: y, pressure: pressure, t: t,
                       style: Style(color: RGBA(rawValue: color), width: width)))
}
