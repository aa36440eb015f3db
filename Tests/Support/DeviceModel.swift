import Foundation
import JournalFormat

/// Device-like value models, each with the information its noise carries per point.
public enum DeviceModel: CaseIterable, CustomStringConvertible, Sendable {
    /// float32 samples of a curve with uniform sensor noise, float32 pressure and time.
    case float32Sensor
    /// Coordinates on a 1/3-point grid, pressure from float32 arithmetic, 2-decimal time.
    case thirdsGrid
    /// Times that are differences of two clock readings (boot + t) - boot.
    case clockDifferences
    /// Doubles after an affine transform with an irrational rotation: no grid at all.
    case transformedDoubles

    public var description: String {
        switch self {
        case .float32Sensor: "float32 sensor"
        case .thirdsGrid: "1/3-point grid"
        case .clockDifferences: "clock differences"
        case .transformedDoubles: "transformed doubles"
        }
    }

    /// Bits per point the noise alone carries, from the models below: uniform noise of width
    /// w at unit u carries log2(w/u) bits, and a second-order predictor's residual about 1.3
    /// bits more (it sums three noisy values).
    public var informationBitsPerPoint: Double {
        switch self {
        // x, y: 0.25 at float32 ulps near 2^-15: 13 + 1.3; pressure: 0.002 at 2^-24.5: 15.5 + 1.3;
        // t: 0.0002 at ulps near 2^-25.5: 13.2 + 1.3
        case .float32Sensor: 14.3 + 14.3 + 16.8 + 14.5
        // x, y: 0.5 on a 1/3 grid: 0.6 + 1.3; pressure: a smooth curve at float32 ulps, under 13 bits;
        // t: 2 decimals of a regular clock, under 2 bits
        case .thirdsGrid: 2 + 2 + 13 + 2
        // x, y: 0.1 on 2 decimals: 3.3 + 1.3; pressure: 2 decimals of a smooth curve, ~1 bit;
        // t: 2e-6 at the boot time's ulp, 2^-42...2^-33 (about 2^-36): 17 + 1
        case .clockDifferences: 4.6 + 4.6 + 1 + 18
        // x, y: about 0.013 after rotation at ulps near 2^-43.5: 37.3 + 1.3; pressure: 0.001 at
        // 2^-53.5: 43.6 + 1.3; t: 3 decimals of a regular clock, under 1 bit
        case .transformedDoubles: 38.6 + 38.6 + 44.9 + 1
        }
    }

    public func session(seed: UInt64, strokes: Int, points: Int) -> [Event] {
        var generator = EventGenerator(seed: seed)
        var random = SeededGenerator(seed: seed &* 31 &+ 7)
        var events: [Event] = []
        let style = Style(color: RGBA(rawValue: 0x1E88E5FF), width: 3)
        func uniform(_ width: Double) -> Double { Double.random(in: -width / 2...width / 2, using: &random) }
        for _ in 0..<strokes {
            let stroke = generator.newStroke()
            let centre = (x: Double.random(in: 200...800, using: &random), y: Double.random(in: 150...650, using: &random))
            let radius = Double.random(in: 30...120, using: &random)
            let speed = Double.random(in: 0.5...3, using: &random)
            let boot = Double.random(in: 2_000...600_000, using: &random)
            let angle = 0.4142135623730951
            for k in 0..<points {
                let phase = Double(k) * speed / 60
                let curveX = centre.x + radius * cos(phase) + 0.3 * sin(phase * 7)
                let curveY = centre.y + radius * sin(phase * 1.3)
                let pressure = 0.5 + 0.3 * sin(phase * 0.7)
                let seconds = Double(k) / 240
                let sample: PointSample
                switch self {
                case .float32Sensor:
                    sample = PointSample(
                        stroke: stroke, x: Double(Float(curveX + uniform(0.25))), y: Double(Float(curveY + uniform(0.25))),
                        pressure: Double(Float(pressure + uniform(0.002))), t: Double(Float(seconds + uniform(0.0002))), style: style)
                case .thirdsGrid:
                    let force = Float(pressure * 6.6666665)
                    sample = PointSample(
                        stroke: stroke, x: ((curveX + uniform(0.5)) * 3).rounded() / 3, y: ((curveY + uniform(0.5)) * 3).rounded() / 3,
                        pressure: Double(force / Float(6.6666665)), t: (seconds * 100).rounded() / 100, style: style)
                case .clockDifferences:
                    sample = PointSample(
                        stroke: stroke, x: ((curveX + uniform(0.1)) * 100).rounded() / 100, y: ((curveY + uniform(0.1)) * 100).rounded() / 100,
                        pressure: (pressure * 100).rounded() / 100, t: k == 0 ? 0 : (boot + seconds + Double.random(in: 0...2e-6, using: &random)) - boot,
                        style: style)
                case .transformedDoubles:
                    let noisyX = curveX + uniform(0.01), noisyY = curveY + uniform(0.01)
                    sample = PointSample(
                        stroke: stroke, x: noisyX * cos(angle) - noisyY * sin(angle) + 300, y: noisyX * sin(angle) + noisyY * cos(angle),
                        pressure: pressure + uniform(0.001), t: (seconds * 1000).rounded() / 1000, style: style)
                }
                events.append(generator.event(.point(sample)))
            }
            events.append(generator.event(.end(stroke)))
        }
        return events
    }
}
