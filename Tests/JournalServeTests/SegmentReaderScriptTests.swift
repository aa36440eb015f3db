import JournalServe
import Testing

/// The page's reader of catch-up blocks is a script of its own, which the page carries in an
/// element a test can find it by (what it decodes, in a browser: Tools/page-test/page_test.py).
@Suite struct SegmentReaderScriptTests {
    @Test func thePageCarriesTheReaderWholeBeforeTheScriptThatUsesIt() throws {
        let element = "<script id=\"segment-reader\">\n" + SegmentReaderScript.source + "\n</script>"
        let reader = try #require(DrawingPage.html.firstRange(of: element))
        let user = try #require(DrawingPage.html.firstRange(of: "window.StrokeJournalSegments;"))
        #expect(reader.upperBound <= user.lowerBound)
        #expect(SegmentReaderScript.source.contains("global.StrokeJournalSegments = {"))
    }

    @Test func nothingInTheReaderEndsItsElementEarly() {
        // An HTML parser ends a script element at the first "</script", whatever the script means.
        #expect(!SegmentReaderScript.source.lowercased().contains("</script"))
        #expect(!SegmentReaderScript.source.contains("<!--"))
    }
}
