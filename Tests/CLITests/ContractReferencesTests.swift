import Foundation
import JournalTestSupport
import Testing

/// Code, tests and docs cite the contract as "invariant N"; each must name an invariant that
/// docs/DESIGN.md defines (a heading "### N. …"), so that a reader of the repository alone can
/// follow every citation.
@Suite(.ownThreads) struct ContractReferencesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The numbers of the invariants docs/DESIGN.md defines.
    static func definedInvariants() throws -> Set<Int> {
        let design = try String(contentsOf: root.appendingPathComponent("docs/DESIGN.md"), encoding: .utf8)
        return Set(design.split(separator: "\n").compactMap { line -> Int? in
            guard line.hasPrefix("### ") else { return nil }
            return Int(line.dropFirst(4).prefix { $0.isNumber })
        })
    }

    /// Every "invariant N" / "invariants N and M" / "invariants N, M" in `text`, with the line.
    static func citations(in text: String) -> [(line: Int, number: Int)] {
        var found: [(Int, Int)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let lower = line.lowercased()
            var rest = lower[...]
            while let hit = rest.firstRange(of: "invariant") {
                rest = rest[hit.upperBound...]
                if rest.hasPrefix("s") { rest = rest.dropFirst() }
                guard rest.hasPrefix(" "), rest.dropFirst().first?.isNumber == true else { continue }
                // The numbers that follow: "3", "3 and 9", "11–15", "2, 4 and 7".
                var numbers = rest.dropFirst()
                while let digit = numbers.first, digit.isNumber {
                    let digits = numbers.prefix { $0.isNumber }
                    if let number = Int(digits) { found.append((index + 1, number)) }
                    numbers = numbers.dropFirst(digits.count)
                    for separator in [", ", " and ", " or ", "–", "-"] where numbers.hasPrefix(separator) {
                        numbers = numbers.dropFirst(separator.count)
                        break
                    }
                }
            }
        }
        return found
    }

    @Test func theContractIsInTheRepositoryAndNumbered() throws {
        let defined = try Self.definedInvariants()
        #expect(defined == Set(1...17), "docs/DESIGN.md defines \(defined.sorted())")
    }

    @Test func everyCitedInvariantIsDefinedInDesignMD() throws {
        let defined = try Self.definedInvariants()
        let folders = ["Sources", "Tests", "docs", "Tools"]
        let kinds = ["swift", "md", "py", "sh", "js", "html"]
        var files = ["README.md"]
        for folder in folders {
            let base = Self.root.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(atPath: base.path) else { continue }
            for case let path as String in walker where kinds.contains((path as NSString).pathExtension)
                && !path.contains(".build") && !path.contains("/corpus/") {
                files.append(folder + "/" + path)
            }
        }
        var cited = 0
        for file in files {
            guard let text = try? String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8) else { continue }
            for citation in Self.citations(in: text) {
                cited += 1
                #expect(defined.contains(citation.number), "\(file):\(citation.line) cites invariant \(citation.number)")
            }
        }
        // The scan found the citations the code relies on (a scan that reads nothing passes nothing).
        #expect(cited >= 50, "only \(cited) citations found in \(files.count) files")
    }

    @Test func theScannerReadsEveryFormOfCitation() {
        // Spelled apart so that the scan of this file finds no citation of a missing invariant.
        let sample = "see invariant 4.\nInvariants 3 and 9; invariants 11–13, " + "invariant" + " 16"
        let numbers = Self.citations(in: sample).map(\.number)
        #expect(numbers == [4, 3, 9, 11, 13, 16])
    }
}
