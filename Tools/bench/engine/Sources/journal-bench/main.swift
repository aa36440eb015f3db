// journal-bench: see `usage` in Options.swift and docs/PERFORMANCE.md.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Child mode: run one row and print its result as one JSON line on standard output.
func runRowChild(_ options: Options) throws {
    guard let name = RowName(rawValue: options.row!) else {
        throw BenchError("unknown row \(options.row!.debugDescription); rows: \(RowName.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    let runner = RowRunner(name: name, workload: Workload(options.workload!), repeats: options.repeats,
                           journalBinary: options.journalBinary, input: options.input)
    let output = try runner.run()
    var line = JSONObject()
    line["row"] = .string(name.rawValue)
    line["seconds"] = .seconds(output.seconds)
    line["cpuSeconds"] = .seconds(output.cpuSeconds)
    line["peakRSSBytes"] = .int(Resources.peakRSSBytes())
    line["extra"] = output.extra.json
    print(line.json.encoded())
}

do {
    let options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
    if options.help {
        print(usage)
    } else if options.row != nil {
        try runRowChild(options)
    } else {
        try Suite(options).run()
    }
} catch {
    log("\(error)")
    exit(1)
}
