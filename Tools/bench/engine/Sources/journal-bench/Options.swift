let usage = """
    usage: journal-bench --workload DIR [--json OUT.json] [--repeat N] [--quick] [--growth-large]
                         [--only ROW,ROW…] [--journal-binary PATH]
           journal-bench row NAME --workload DIR [--repeat N] [--input DIR] [--journal-binary PATH]

    Runs every row of StrokeJournal's benchmark on the workload in DIR (replica-*.ndjson from
    the standard generator, $SHARED_BENCH/gen_session.py or ../shared/bench/gen_session.py
    beside the repository, else from the repository's own Tools/bench/workload/session.py,
    whose figures are not comparable with docs/PERFORMANCE.md; generated there with the
    standard parameters if DIR does not exist), prints a table of medians (and minimums)
    with ratios and targets, and writes the results as JSON. Each row runs in a child process
    (`journal-bench row NAME …`) so that its peak RSS is its own. Scratch journals go to
    DIR-work; the +1% session to DIR-extra.

      --workload DIR       the workload (replica-0.ndjson, replica-1.ndjson, …)
      --json OUT           also write the results as JSON (keys: docs/PERFORMANCE.md)
      --repeat N           runs per timed row; the table shows the median and the minimum (default 5)
      --quick              skip the growth, Hershey, precision, residualCoder and live rows (unless --only names them); default --repeat 3
      --growth-large       add the 4× (8M points, ~1.2 GB of NDJSON) and 64-replica growth cases
      --only ROWS          run only these rows (comma-separated names, see below); for debugging
      --journal-binary P   the `journal` CLI to time (default: <repo>/.build/release/journal,
                           built with `swift build -c release --product journal` if missing)

    Rows: \(RowName.allCases.map(\.rawValue).joined(separator: ", "))
    """

struct Options {
    var workload: String?
    var jsonPath: String?
    var repeatCount: Int?
    var quick = false
    var growthLarge = false
    var only: Set<String>?
    var journalBinary: String?
    /// Child mode: the row to run.
    var row: String?
    /// Child mode: a workload other than `workload` (growth, Hershey).
    var input: String?
    var help = false

    var repeats: Int { max(1, repeatCount ?? (quick ? 3 : 5)) }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var index = 0
        func value(_ flag: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw BenchError("\(flag) needs a value") }
            return arguments[index]
        }
        if arguments.first == "row" {
            guard arguments.count >= 2 else { throw BenchError("row needs a NAME") }
            options.row = arguments[1]
            index = 2
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--workload": options.workload = try value(argument)
            case "--json": options.jsonPath = try value(argument)
            case "--repeat":
                let text = try value(argument)
                guard let count = Int(text), count >= 1 else { throw BenchError("--repeat needs a positive integer, got \(text)") }
                options.repeatCount = count
            case "--quick": options.quick = true
            case "--growth-large": options.growthLarge = true
            case "--only": options.only = Set(try value(argument).split(separator: ",").map(String.init))
            case "--journal-binary": options.journalBinary = try value(argument)
            case "--input": options.input = try value(argument)
            case "-h", "--help": options.help = true
            default: throw BenchError("unknown argument \(argument.debugDescription)\n\n\(usage)")
            }
            index += 1
        }
        if !options.help && options.workload == nil { throw BenchError("--workload DIR is required\n\n\(usage)") }
        return options
    }
}
