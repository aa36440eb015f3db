/// Why one line of input was refused. It carries only the reason: `NDJSONReader` adds the
/// source and the line number (see `InputError`).
public struct LineError: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}

/// A problem with one line of one input, or with the input as a whole.
///
/// `line` is 1-based. It is 0 for problems that belong to no line (the file cannot be
/// opened); `description` then leaves the number out: `"<source>: <reason>"`.
public struct InputError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file path, or `"<stdin>"`.
    public var source: String
    /// 1-based line number; 0 when the error concerns the whole input.
    public var line: Int
    public var reason: String

    public init(source: String, line: Int, reason: String) {
        self.source = source
        self.line = line
        self.reason = reason
    }

    public init(source: String, line: Int, _ error: LineError) {
        self.init(source: source, line: line, reason: error.reason)
    }

    /// `"<source>:<line>: <reason>"`, or `"<source>: <reason>"` when `line` is 0.
    public var description: String {
        line > 0 ? "\(source):\(line): \(reason)" : "\(source): \(reason)"
    }
}
