import JournalPlatform

/// What git users type and the argument parser does not take as is: `-C DIR` (or
/// `--journal DIR`) before the subcommand, `-CDIR` glued, and a mistyped subcommand name.
/// The journal given before the subcommand is handed on through `$JOURNAL_DIR`, which every
/// command's `-C` already falls back to; one given after the subcommand still wins.
package enum GlobalArguments {
    package enum Outcome {
        case run([String], journal: String?)
        case unknownCommand(String, suggestion: String?)
    }

    package static func rewrite(_ arguments: [String], commands: [String]) -> Outcome {
        var rest: [String] = []
        var journal: String?
        var index = 0
        var seenCommand = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" { rest += arguments[(index - 1)...]; break }
            let glued = argument.hasPrefix("-C") && argument.count > 2 && !argument.hasPrefix("--")
            if !seenCommand {
                if argument == "-C" || argument == "--journal", index < arguments.count {
                    journal = arguments[index]
                    index += 1
                    continue
                }
                if glued { journal = String(argument.dropFirst(2)); continue }
                if argument.hasPrefix("--journal=") { journal = String(argument.dropFirst("--journal=".count)); continue }
                if !argument.hasPrefix("-") {
                    seenCommand = true
                    if !commands.contains(argument) && argument != "help" {
                        return .unknownCommand(argument, suggestion: closest(argument, among: commands))
                    }
                    // `help rendr` is as unknown as `rendr` (the root help, exit 0, said nothing).
                    if argument == "help", index < arguments.count, !arguments[index].hasPrefix("-"),
                       !commands.contains(arguments[index]) {
                        return .unknownCommand(arguments[index], suggestion: closest(arguments[index], among: commands))
                    }
                }
            } else if glued {
                rest += ["-C", String(argument.dropFirst(2))]
                continue
            }
            rest.append(argument)
        }
        return .run(rest, journal: journal)
    }

    /// The command within two edits of `word`, if exactly one is closest.
    package static func closest(_ word: String, among commands: [String]) -> String? {
        let scored = commands.map { ($0, distance(Array(word), Array($0))) }.filter { $0.1 <= 2 }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        let tied = scored.filter { $0.1 == best.1 }.map(\.0)
        if tied.count == 1 { return tied[0] }
        // "stauts" is as near "stats" as "status": the command with the same letters (a slip of
        // order), else the one of the same length, is the likelier meaning.
        let anagrams = tied.filter { $0.sorted() == word.sorted() }
        if anagrams.count == 1 { return anagrams[0] }
        let sameLength = tied.filter { $0.count == word.count }
        return sameLength.count == 1 ? sameLength[0] : nil
    }

    /// Optimal string alignment distance (Levenshtein plus adjacent swaps: "verfy" → "verify").
    package static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
