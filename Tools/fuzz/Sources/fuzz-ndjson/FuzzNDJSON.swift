// libFuzzer harness: arbitrary bytes as NDJSON input lines for `LineParser`.
//
// The input is parsed once as one line, then split on "\n" and parsed line by line. For every
// line the parser accepts:
//   - every payload passes `Payload.validate()` (the parser promises to refuse the rest);
//   - `CanonicalJSON.line(for:)` of every payload parses back to exactly that payload, bit for
//     bit, and prints the same line again (the round trip `journal log | journal record` relies on);
//   - the canonical-layout fast path agrees with the general parser: the same payloads, or
//     both refuse (checked on lines that are valid UTF-8, as `parseInGeneral` takes a String).
// A violated property is a `preconditionFailure`, which libFuzzer reports as a crash.
@_spi(Testing) import JournalIngest
import JournalFormat

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    checkLine(input)
    var start = 0
    var sawNewline = false
    for index in 0..<size where data[index] == UInt8(ascii: "\n") {
        checkLine(UnsafeRawBufferPointer(rebasing: input[start..<index]))
        start = index + 1
        sawNewline = true
    }
    if sawNewline, start < size {
        checkLine(UnsafeRawBufferPointer(rebasing: input[start..<size]))
    }
    return 0
}

private func checkLine(_ line: UnsafeRawBufferPointer) {
    let outcome: Result<[Payload], LineError>
    do throws(LineError) {
        outcome = .success(try LineParser.parse(line))
    } catch {
        outcome = .failure(error)
    }

    // The fast path against the general parser.
    if let text = String(validating: line, as: UTF8.self) {
        let general: Result<[Payload], LineError>
        do throws(LineError) {
            general = .success(try LineParser.parseInGeneral(text))
        } catch {
            general = .failure(error)
        }
        switch (outcome, general) {
        case (.success(let fast), .success(let slow)):
            precondition(fast == slow, "parse and parseInGeneral disagree on \(text.debugDescription): \(fast) vs \(slow)")
        case (.failure, .failure):
            break
        case (.success(let fast), .failure(let error)):
            preconditionFailure("parse accepts \(text.debugDescription) as \(fast), parseInGeneral refuses it: \(error)")
        case (.failure(let error), .success(let slow)):
            preconditionFailure("parse refuses \(text.debugDescription) (\(error)), parseInGeneral accepts it as \(slow)")
        }
    }

    guard case .success(let payloads) = outcome else { return }
    for payload in payloads {
        do throws(EventValidationError) {
            try payload.validate()
        } catch {
            preconditionFailure("the parser returned an invalid payload \(payload): \(error)")
        }
        checkRoundTrip(payload)
    }
}

private func checkRoundTrip(_ payload: Payload) {
    let canonical = CanonicalJSON.line(for: payload)
    let again: [Payload]
    do throws(LineError) {
        again = try LineParser.parse(canonical)
    } catch {
        preconditionFailure("the canonical line \(canonical) of \(payload) does not parse: \(error)")
    }
    precondition(again == [payload], "the canonical line \(canonical) parses to \(again), not \(payload)")
    precondition(CanonicalJSON.line(for: again[0]) == canonical, "the canonical line is not stable: \(canonical)")
    if let fast = LineParser.templatePayload(canonical) {
        precondition(fast == payload, "the fast path reads \(canonical) as \(fast), not \(payload)")
    }
    do throws(LineError) {
        let slow = try LineParser.parseInGeneral(canonical)
        precondition(slow == [payload], "the general parser reads \(canonical) as \(slow), not \(payload)")
    } catch {
        preconditionFailure("the general parser refuses the canonical line \(canonical): \(error)")
    }
}
