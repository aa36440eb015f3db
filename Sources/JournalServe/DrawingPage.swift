/// The drawing page and the files it loads (Sources/JournalServe/Web, described at the top of
/// each file), embedded in the binary at build time: the relay is all a browser needs, and no
/// file is read at run time. The page is the same for every board (it reads the board's name
/// from its own address); its files are served under `/assets/`.
public enum DrawingPage {
    /// One file of the page, as served.
    public struct Asset: Sendable {
        public let name: String
        public let contentType: String
        public let bytes: [UInt8]

        public var text: String { String(decoding: bytes, as: UTF8.self) }
    }

    public static let contentType = "text/html; charset=utf-8"

    /// The page at `/boards/<board>`.
    public static let page = Asset(name: "board.html", contentType: contentType, bytes: PackageResources.board_html)

    /// The relay's front page at `/`: open a board by name, see the boards open.
    public static let index = Asset(name: "index.html", contentType: contentType, bytes: PackageResources.index_html)

    /// The page as text.
    public static var html: String { page.text }

    /// What `/assets/<name>` serves: the page's style, its script's modules, the reader of catch-up
    /// blocks (docs/PROTOCOL.md, "Catch-up in blocks") and the worker that runs it.
    public static let assets: [String: Asset] = {
        let javaScript = "text/javascript; charset=utf-8"
        let files = [
            Asset(name: "board.css", contentType: "text/css; charset=utf-8", bytes: PackageResources.board_css),
            // The page's script as ES modules, from board.mjs (which names the others).
            Asset(name: "board.mjs", contentType: javaScript, bytes: PackageResources.board_mjs),
            Asset(name: "page.mjs", contentType: javaScript, bytes: PackageResources.page_mjs),
            Asset(name: "fold.mjs", contentType: javaScript, bytes: PackageResources.fold_mjs),
            Asset(name: "identity.mjs", contentType: javaScript, bytes: PackageResources.identity_mjs),
            Asset(name: "view.mjs", contentType: javaScript, bytes: PackageResources.view_mjs),
            Asset(name: "picture.mjs", contentType: javaScript, bytes: PackageResources.picture_mjs),
            Asset(name: "connection.mjs", contentType: javaScript, bytes: PackageResources.connection_mjs),
            Asset(name: "tools.mjs", contentType: javaScript, bytes: PackageResources.tools_mjs),
            Asset(name: "history.mjs", contentType: javaScript, bytes: PackageResources.history_mjs),
            Asset(name: "presence.mjs", contentType: javaScript, bytes: PackageResources.presence_mjs),
            Asset(name: "segment-reader.js", contentType: javaScript, bytes: PackageResources.segment_reader_js),
            Asset(name: "segment-worker.js", contentType: javaScript, bytes: PackageResources.segment_worker_js),
            Asset(name: "index.css", contentType: "text/css; charset=utf-8", bytes: PackageResources.index_css),
            Asset(name: "index.js", contentType: javaScript, bytes: PackageResources.index_js),
        ]
        return Dictionary(uniqueKeysWithValues: files.map { ($0.name, $0) })
    }()

    /// The path the page loads `asset` from.
    public static func path(of asset: String) -> String { "/assets/" + asset }
}
