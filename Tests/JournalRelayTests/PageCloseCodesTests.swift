import Foundation
import JournalPlatform
import JournalWire
import Testing

/// The drawing page and the relay agree on what each close code means.
@Suite struct PageCloseCodesTests {
    /// The page's own table of close codes (connection.mjs `CLOSE_CODES`, read when a close's last
    /// message was lost) names exactly the codes the relay closes with.
    @Test func thePagesCloseCodesAreTheRelaysCodes() throws {
        let file = #filePath
        let root = String(file[..<file.range(of: "/Tests/")!.lowerBound])
        let script = String(decoding: try FileSystem.readFile(root + "/Sources/JournalServe/Web/connection.mjs"), as: UTF8.self)
        let start = try #require(script.range(of: "const CLOSE_CODES = {"))
        let table = script[start.upperBound..<(try #require(script[start.upperBound...].range(of: "};")).lowerBound)]
        var page: [UInt16: String] = [:]
        for entry in table.split(separator: ",") {
            let parts = entry.split(separator: ":")
            guard parts.count == 2, let number = UInt16(parts[0].trimmingCharacters(in: .whitespacesAndNewlines)) else { continue }
            page[number] = parts[1].trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: CharacterSet(charactersIn: "'"))
        }
        var relay: [UInt16: String] = [:]
        for code in RefusalCode.allCases where code != .unspecified { relay[code.closeCode] = code.rawValue }
        #expect(page == relay)
    }
}
