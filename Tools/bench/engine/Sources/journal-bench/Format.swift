/// Number formatting without Foundation. Sizes are decimal: 1 MB = 10^6 bytes.

func fixed(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return value.isNaN ? "n/a" : (value > 0 ? "inf" : "-inf") }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    let whole = Int(scaled / scale)
    var text = (value < 0 && scaled > 0 ? "-" : "") + String(whole)
    if decimals > 0 {
        let fraction = Int(scaled - Double(whole) * scale)
        let digits = String(fraction)
        text += "." + String(repeating: "0", count: decimals - digits.count) + digits
    }
    return text
}

/// Three significant digits or so: 0.00123, 0.0123, 0.123, 1.23, 12.3, 123.
func significant(_ value: Double) -> String {
    let magnitude = abs(value)
    if magnitude >= 100 { return fixed(value, 0) }
    if magnitude >= 10 { return fixed(value, 1) }
    if magnitude >= 1 { return fixed(value, 2) }
    if magnitude >= 0.1 { return fixed(value, 3) }
    if magnitude >= 0.01 { return fixed(value, 4) }
    return fixed(value, 5)
}

func grouped(_ value: Int) -> String {
    let digits = String(abs(value))
    var out = ""
    for (index, character) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { out += "," }
        out.append(character)
    }
    return (value < 0 ? "-" : "") + out
}

func formatSeconds(_ seconds: Double?) -> String {
    guard let seconds, seconds.isFinite else { return "-" }
    if seconds < 0.001 { return fixed(seconds * 1e6, 0) + " µs" }
    if seconds < 0.1 { return significant(seconds * 1000) + " ms" }
    return significant(seconds) + " s"
}

func formatBytes(_ bytes: Int?) -> String {
    guard let bytes else { return "-" }
    let value = Double(bytes)
    if value >= 1e9 { return significant(value / 1e9) + " GB" }
    if value >= 1e6 { return significant(value / 1e6) + " MB" }
    if value >= 1e3 { return significant(value / 1e3) + " kB" }
    return String(bytes) + " B"
}

/// 6.64 M, 950 k.
func formatCount(_ value: Double) -> String {
    if value >= 1e9 { return significant(value / 1e9) + " G " }
    if value >= 1e6 { return significant(value / 1e6) + " M " }
    if value >= 1e3 { return significant(value / 1e3) + " k " }
    return significant(value) + " "
}

func formatRatio(_ value: Double?) -> String {
    guard let value, value.isFinite else { return "n/a" }
    return significant(value) + "×"
}

/// A table whose columns fit their widest cell; `nil` rows are section headings.
struct Table {
    enum Alignment { case left, right }
    var header: [String]
    var alignments: [Alignment]
    var rows: [(heading: String?, cells: [String])] = []

    init(_ header: [String], alignments: [Alignment]) {
        self.header = header
        self.alignments = alignments
    }

    mutating func section(_ title: String) { rows.append((title, [])) }
    mutating func add(_ cells: [String]) { rows.append((nil, cells)) }

    func render() -> String {
        var widths = header.map(\.count)
        for row in rows where row.heading == nil {
            for (index, cell) in row.cells.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        func line(_ cells: [String]) -> String {
            var parts: [String] = []
            for (index, cell) in cells.enumerated() {
                let pad = String(repeating: " ", count: max(0, widths[index] - cell.count))
                parts.append(alignments[index] == .left ? cell + pad : pad + cell)
            }
            var text = parts.joined(separator: "  ")
            while text.hasSuffix(" ") { text.removeLast() }
            return text
        }
        var out = line(header) + "\n"
        for row in rows {
            if let heading = row.heading {
                out += heading + "\n"
            } else {
                out += line(row.cells + Array(repeating: "", count: max(0, header.count - row.cells.count))) + "\n"
            }
        }
        return out
    }
}
