import Foundation
import JournalFormat
import JournalReplay
import JournalTestSupport
import Testing

@testable import JournalRender

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Parses an SVG with Foundation's XMLParser and keeps every element with its attributes.
private final class ElementCollector: NSObject, XMLParserDelegate {
    var elements: [(name: String, attributes: [String: String])] = []
    var comments: [String] = []

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
        qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
    ) {
        elements.append((elementName, attributeDict))
    }

    func parser(_ parser: XMLParser, foundComment comment: String) {
        comments.append(comment)
    }

    static func parse(_ svg: String) -> (ok: Bool, collector: ElementCollector) {
        let collector = ElementCollector()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = collector
        let ok = parser.parse()
        return (ok, collector)
    }
}

@Suite(.ownThreads) struct SVGRendererTests {
    private static func id(_ n: UInt64) -> StrokeID { StrokeID(UUIDBits(high: 0xABCD, low: n)) }

    private static func stroke(
        _ n: UInt64, color: UInt32, width: Double = 4, visible: Bool = true,
        points: [(Double, Double)], pressures: [Double]? = nil
    ) -> Drawing.Stroke {
        let samples = points.enumerated().map { index, point in
            Drawing.Point(x: point.0, y: point.1, pressure: pressures?[index], t: Double(index) / 120)
        }
        return Drawing.Stroke(
            id: id(n), style: Style(color: RGBA(rawValue: color), width: width), points: samples,
            visible: visible, ended: true)
    }

    static func number(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    @Test func strokesOutsideAGivenAreaAreCounted() {
        let drawing = Drawing(strokes: [
            Self.stroke(1, color: 0xFF00_00FF, points: [(0, 0), (100, 100)]),
            Self.stroke(2, color: 0x00FF_0080, points: [(50, 50), (2000, 50)]),
        ])
        #expect(SVGRenderer.strokesOutside(.init(x: -10, y: -10, width: 300, height: 300), of: drawing) == 1)
        #expect(SVGRenderer.strokesOutside(SVGRenderer.contentBounds(drawing), of: drawing) == 0)
    }

    private func elements(_ svg: String, named name: String) -> [[String: String]] {
        ElementCollector.parse(svg).collector.elements.filter { $0.name == name }.map(\.attributes)
    }

    @Test func outputIsWellFormedXMLWithTheCanvasGeometry() throws {
        let drawing = Drawing(strokes: [
            Self.stroke(1, color: 0xFF00_00FF, points: [(0, 0), (100, 100), (200, 50)]),
            Self.stroke(2, color: 0x00FF_0080, points: [(500, 400)]),
        ])
        let svg = SVGRenderer(width: 640, height: 480.5).render(drawing)
        let (ok, collector) = ElementCollector.parse(svg)
        #expect(ok)
        let root = try #require(collector.elements.first)
        #expect(root.name == "svg")
        #expect(root.attributes["xmlns"] == "http://www.w3.org/2000/svg")
        // Fitted to the strokes: x 0...500, y 0...400, padded by half the pen and 2%.
        let fit = SVGRenderer.contentBounds(drawing)
        #expect(fit.x < 0 && fit.y < 0 && fit.x + fit.width > 500 && fit.y + fit.height > 400)
        #expect(root.attributes["viewBox"] == "\(Self.number(fit.x)) \(Self.number(fit.y)) \(Self.number(fit.width)) \(Self.number(fit.height))")
        let given = SVGRenderer(width: 640, height: 480.5, area: .init(x: 0, y: 0, width: 640, height: 480.5)).render(drawing)
        #expect(ElementCollector.parse(given).collector.elements.first?.attributes["viewBox"] == "0 0 640 480.5")
        #expect(root.attributes["width"] == "640")
        #expect(root.attributes["height"] == "480.5")
        #expect(collector.comments.contains { $0.contains("2 strokes") })
        let background = try #require(collector.elements.first { $0.name == "rect" })
        #expect(background.attributes["fill"] == "#FFFFFF")
        #expect(background.attributes["fill-opacity"] == nil)
    }

    @Test func noBackgroundWhenNil() {
        let svg = SVGRenderer(background: nil).render(Drawing())
        #expect(ElementCollector.parse(svg).ok)
        #expect(elements(svg, named: "rect").isEmpty)
        #expect(svg.contains("0 strokes"))
    }

    @Test func hiddenStrokesAreAbsent() {
        let drawing = Drawing(strokes: [
            Self.stroke(1, color: 0xFF00_00FF, points: [(1, 1), (2, 2)]),
            Self.stroke(2, color: 0x0000_FFFF, visible: false, points: [(3, 3), (4, 4)]),
            Self.stroke(3, color: 0x00FF_00FF, visible: false, points: [(5, 5)]),
        ])
        let svg = SVGRenderer().render(drawing)
        #expect(!svg.contains("#0000FF"))
        #expect(!svg.contains("#00FF00"))
        #expect(elements(svg, named: "polyline").count == 1)
        #expect(elements(svg, named: "circle").isEmpty)
        #expect(svg.contains("<!-- 1 stroke (2 hidden) -->"))
    }

    @Test func colourOpacityAndWidth() throws {
        let drawing = Drawing(strokes: [
            Self.stroke(1, color: 0x1234_5680, width: 3, points: [(1, 1), (2, 2)]),
            Self.stroke(2, color: 0xABCD_EFFF, width: 7.25, points: [(1, 1), (2, 2)]),
        ])
        let lines = elements(SVGRenderer().render(drawing), named: "polyline")
        try #require(lines.count == 2)
        #expect(lines[0]["stroke"] == "#123456")
        #expect(lines[0]["stroke-opacity"] == "0.502")
        #expect(lines[0]["stroke-width"] == "3")
        #expect(lines[1]["stroke"] == "#ABCDEF")
        #expect(lines[1]["stroke-opacity"] == nil)
        #expect(lines[1]["stroke-width"] == "7.25")
        for line in lines {
            #expect(line["fill"] == "none")
            #expect(line["stroke-linecap"] == "round")
            #expect(line["stroke-linejoin"] == "round")
        }
    }

    @Test func onePointStrokeIsADot() throws {
        let drawing = Drawing(strokes: [Self.stroke(1, color: 0xFFAA_0040, width: 9, points: [(12.5, 300)])])
        let svg = SVGRenderer().render(drawing)
        #expect(elements(svg, named: "polyline").isEmpty)
        let dots = elements(svg, named: "circle")
        try #require(dots.count == 1)
        #expect(dots[0]["cx"] == "12.5")
        #expect(dots[0]["cy"] == "300")
        #expect(dots[0]["r"] == "4.5")
        #expect(dots[0]["fill"] == "#FFAA00")
        #expect(dots[0]["fill-opacity"] == "0.251")
    }

    @Test func coordinatesOfAKnownStroke() throws {
        let drawing = Drawing(strokes: [
            Self.stroke(1, color: 0x0000_00FF, points: [(10, 20), (30.456, 40.001), (50.5, 60), (-0.001, 799.999), (0.1, 1e-9)])
        ])
        let lines = elements(SVGRenderer().render(drawing), named: "polyline")
        try #require(lines.count == 1)
        #expect(lines[0]["points"] == "10,20 30.46,40 50.5,60 0,800 0.1,0")
    }

    @Test func zOrderIsKept() {
        let colors: [UInt32] = [0x1111_11FF, 0x2222_22FF, 0x3333_33FF, 0x4444_44FF]
        let drawing = Drawing(strokes: colors.enumerated().map { index, color in
            index == 2
                ? Self.stroke(UInt64(index), color: color, points: [(5, 5)])
                : Self.stroke(UInt64(index), color: color, points: [(0, 0), (10, 10)])
        })
        let drawn = ElementCollector.parse(SVGRenderer().render(drawing)).collector.elements
            .compactMap { $0.attributes["stroke"] ?? ($0.name == "circle" ? $0.attributes["fill"] : nil) }
        #expect(drawn == ["#111111", "#222222", "#333333", "#444444"])
    }

    @Test func constantPressureScalesTheWidthInOneElement() throws {
        let drawing = Drawing(strokes: [
            Self.stroke(1, color: 0x0000_00FF, width: 10, points: [(0, 0), (1, 1), (2, 2), (3, 3)], pressures: [0.5, 0.5, 0.5, 0.5])
        ])
        let lines = elements(SVGRenderer().render(drawing), named: "polyline")
        try #require(lines.count == 1)
        #expect(lines[0]["stroke-width"] == "7")  // 10 × (0.4 + 0.6 × 0.5)
    }

    @Test func varyingPressureMakesAFewRunsThatJoinUp() throws {
        let count = 200
        let points = (0..<count).map { (Double($0) * 2, 100.0) }
        // Pressure rises from 0.2 to 1 and falls back, like a pen stroke.
        let pressures = (0..<count).map { index in
            0.2 + 0.8 * sin(Double.pi * Double(index) / Double(count - 1))
        }
        let drawing = Drawing(strokes: [Self.stroke(1, color: 0x0000_00FF, width: 10, points: points, pressures: pressures)])
        let renderer = SVGRenderer()
        let runs = renderer.runs(of: drawing.strokes[0])
        #expect(runs.count > 2)
        #expect(runs.count < 30)
        #expect(runs.first?.first == 0)
        #expect(runs.last?.last == count - 1)
        for (previous, next) in zip(runs, runs.dropFirst()) { #expect(previous.last == next.first) }
        let widths = runs.map(\.width)
        #expect(widths.allSatisfy { $0 >= 10 * (0.4 + 0.6 * 0.2) - 1e-9 && $0 <= 10 + 1e-9 })
        #expect(widths.max()! > 9)
        #expect(widths.first! < 6)

        let lines = elements(renderer.render(drawing), named: "polyline")
        #expect(lines.count == runs.count)
    }

    @Test func pointStylesSplitTheStroke() throws {
        let red = Style(color: RGBA(rawValue: 0xFF00_00FF), width: 2)
        let blue = Style(color: RGBA(rawValue: 0x0000_FFFF), width: 6)
        let points = (0..<5).map { Drawing.Point(x: Double($0) * 10, y: 5, pressure: nil, t: nil) }
        let stroke = Drawing.Stroke(
            id: Self.id(1), style: blue, pointStyles: [red, red, red, blue, blue], points: points,
            visible: true, ended: true)
        let lines = elements(SVGRenderer().render(Drawing(strokes: [stroke])), named: "polyline")
        try #require(lines.count == 2)
        #expect(lines[0]["stroke"] == "#FF0000")
        #expect(lines[0]["stroke-width"] == "2")
        #expect(lines[0]["points"] == "0,5 10,5 20,5 30,5")
        #expect(lines[1]["stroke"] == "#0000FF")
        #expect(lines[1]["stroke-width"] == "6")
        #expect(lines[1]["points"] == "30,5 40,5")
    }

    @Test func strokesWithoutPointsDrawNothing() {
        let empty = Drawing.Stroke(
            id: Self.id(1), style: Style(color: RGBA(rawValue: 0xFF), width: 1), points: [], visible: true, ended: true)
        let svg = SVGRenderer().render(Drawing(strokes: [empty]))
        #expect(ElementCollector.parse(svg).ok)
        #expect(elements(svg, named: "polyline").isEmpty)
        #expect(elements(svg, named: "circle").isEmpty)
    }
}
