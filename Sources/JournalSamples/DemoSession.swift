import JournalFormat

/// A small, built-in, deterministic drawing session for `journal demo`: a sunny garden
/// scene on a 1000 × 800 canvas, drawn by three people at once.
///
/// - replica 0 draws the sky and the meadow: a spiral sun, clouds and wavy grass lines;
/// - replica 1 draws three flowers (stem, petals, a dot for the heart) and three stars;
/// - replica 2 draws a house with a chimney, smoke, door, windows and a picket fence, then
///   a stray scribble.
///
/// Control events exercise the fold's rules: replica 0 undoes one of its own waves and redoes
/// it two strokes later; replica 1 erases replica 2's scribble (of replica 0's last stroke when
/// there are only two replicas). There is no `clear`. Replicas past the third, and strokes past
/// a theme's twelfth, are small doodles (stars, swirls, loops) scattered over the sky.
///
/// Points are sampled like a pen at 120 Hz: `t` is seconds since the stroke began (3
/// decimals), x and y have 2 decimals, pressure lies in 0.2…1 (2 decimals).
public enum DemoSession {
    public static let canvasWidth = 1000.0
    public static let canvasHeight = 800.0
    /// Pen sampling rate, in samples per second.
    public static let sampleRate = 120.0

    /// One payload list per replica, in the order that replica records them.
    public static func replicas(count: Int = 3, strokesPerReplica: Int = 12, seed: UInt64 = 2026) -> [[Payload]] {
        let count = max(0, count)
        let perReplica = max(0, strokesPerReplica)
        var random = SplitMix64(seed: seed)

        // Every stroke id first, so that any replica can name any other's strokes.
        let ids: [[StrokeID]] = (0..<count).map { _ in
            (0..<perReplica).map { _ in
                // Shaped like a random (version 4) UUID.
                let high = (random.next() & ~0xF000) | 0x4000
                let low = (random.next() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
                return StrokeID(UUIDBits(high: high, low: low))
            }
        }

        // Who erases what: replica 1 erases the last stroke of replica 2 (0 when only two).
        let eraseTarget: (replica: Int, stroke: Int)? =
            count >= 2 && perReplica >= 1 ? (2 % count, perReplica - 1) : nil
        // Replica 0 undoes, then redoes, one of its waves (or whatever it has).
        let undone = min(5, max(0, perReplica - 2))

        var result: [[Payload]] = []
        for replica in 0..<count {
            var payloads: [Payload] = []
            for index in 0..<perReplica {
                let isScribble = eraseTarget.map { $0.replica == replica && $0.stroke == index } ?? false
                let shape = isScribble
                    ? Scene.scribble(&random)
                    : Scene.shape(replica: replica, index: index, random: &random)
                let id = ids[replica][index]
                for sample in Pen.samples(along: shape.path, random: &random) {
                    payloads.append(.point(PointSample(
                        stroke: id, x: sample.x, y: sample.y, pressure: sample.pressure, t: sample.t,
                        style: shape.style)))
                }
                payloads.append(.end(id))

                if replica == 0 && perReplica > 0 {
                    if index == undone { payloads.append(.undo(ids[0][undone])) }
                    let redoAfter = min(undone + 2, perReplica - 1)
                    if index == redoAfter { payloads.append(.redo(ids[0][undone])) }
                }
            }
            if replica == 1, let target = eraseTarget {
                payloads.append(.erase(ids[target.replica][target.stroke]))
            }
            result.append(payloads)
        }
        return result
    }
}

// MARK: - Randomness

/// SplitMix64 (Steele, Lea & Flood): tiny, fast and fully determined by its seed (the sample
/// session, and benchmarks that need the same shuffle in every run and build).
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// Uniform in [low, high).
    mutating func uniform(_ low: Double, _ high: Double) -> Double { low + (high - low) * unit() }

    /// Uniform in 0..<bound.
    mutating func index(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

// MARK: - Geometry

private struct Vec {
    var x: Double
    var y: Double
    init(_ x: Double, _ y: Double) {
        self.x = x
        self.y = y
    }
}

/// What a stroke looks like before the pen draws it: a dense path and a style.
private struct Shape {
    var path: [Vec]
    var style: Style
}

private let tau = 2 * Double.pi

/// Sine without libm, so that the demo is bit-for-bit the same on every platform: reduce to
/// [-π/2, π/2], then the Taylor series to x¹⁵ (error below 1e-11 there).
private func sin(_ x: Double) -> Double {
    var r = x - (x / tau).rounded() * tau
    if r > Double.pi / 2 {
        r = Double.pi - r
    } else if r < -Double.pi / 2 {
        r = -Double.pi - r
    }
    let r2 = r * r
    return r * (1 - r2 / 6 * (1 - r2 / 20 * (1 - r2 / 42 * (1 - r2 / 72 * (1 - r2 / 110 * (1 - r2 / 156 * (1 - r2 / 210)))))))
}

private func cos(_ x: Double) -> Double { sin(x + Double.pi / 2) }

/// A parametric curve sampled densely (`steps` + 1 points for s in 0…1).
private func curve(steps: Int = 600, _ point: (Double) -> Vec) -> [Vec] {
    (0...steps).map { point(Double($0) / Double(steps)) }
}

/// Straight edges through the vertices, subdivided every ~2 units so the pen slows evenly.
private func polyline(_ vertices: [Vec]) -> [Vec] {
    guard var previous = vertices.first else { return [] }
    var path = [previous]
    for vertex in vertices.dropFirst() {
        let length = ((vertex.x - previous.x) * (vertex.x - previous.x) + (vertex.y - previous.y) * (vertex.y - previous.y)).squareRoot()
        let steps = max(1, Int(length / 2))
        for step in 1...steps {
            let s = Double(step) / Double(steps)
            path.append(Vec(previous.x + (vertex.x - previous.x) * s, previous.y + (vertex.y - previous.y) * s))
        }
        previous = vertex
    }
    return path
}

private func style(_ hex: UInt32, alpha: UInt8 = 255, width: Double) -> Style {
    Style(color: RGBA(rawValue: hex << 8 | UInt32(alpha)), width: width)
}

// MARK: - The scene

private enum Scene {
    static let ground = 620.0
    static let themeSize = 12

    static func shape(replica: Int, index: Int, random: inout SplitMix64) -> Shape {
        guard replica < 3, index < themeSize else { return doodle(&random) }
        switch replica {
        case 0: return sky(index)
        case 1: return garden(index)
        default: return house(index)
        }
    }

    // Replica 0: sun, clouds, meadow.
    static func sky(_ index: Int) -> Shape {
        switch index {
        case 0:
            // The sun: a spiral winding outwards.
            let center = Vec(130, 130)
            return Shape(
                path: curve(steps: 900) { s in
                    let angle = -Double.pi / 2 + s * 4.5 * tau
                    let radius = 6 + 64 * s
                    return Vec(center.x + radius * cos(angle), center.y + radius * sin(angle))
                },
                style: style(0xF5A623, width: 6))
        case 1, 2, 3:
            let clouds = [(Vec(390, 120), 90.0, 34.0), (Vec(640, 205), 70.0, 28.0), (Vec(880, 95), 80.0, 30.0)]
            let (center, rx, ry) = clouds[index - 1]
            return Shape(
                path: curve { s in
                    // A scalloped ellipse: bumps on the top half, flatter underneath.
                    let angle = Double.pi + s * tau
                    let bump = 1 + 0.16 * abs(sin(angle * 3.5)) * (sin(angle) < 0 ? 1.4 : 0.5)
                    return Vec(center.x + rx * bump * cos(angle), center.y + ry * bump * sin(angle))
                },
                style: style(0x78909C, alpha: 0xC8, width: 4))
        default:
            // Wavy grass lines across the meadow, deeper greens lower down.
            let row = Double(index - 4)
            let greens: [UInt32] = [0x9CCC65, 0x8BC34A, 0x7CB342, 0x689F38, 0x558B2F, 0x43A047, 0x388E3C, 0x2E7D32]
            let y0 = 645 + 20 * row
            let wavelength = 120 + 14 * row
            let phase = row * 1.3
            return Shape(
                path: curve { s in
                    let x = 40 + 920 * s
                    return Vec(x, y0 + (5 + row * 0.6) * sin(tau * x / wavelength + phase))
                },
                style: style(greens[(index - 4) % greens.count], width: 5))
        }
    }

    // Replica 1: three flowers and three stars.
    static func garden(_ index: Int) -> Shape {
        let flowers: [(base: Double, head: Vec, petals: UInt32, size: Double)] = [
            (base: 110.0, head: Vec(125, 470), petals: 0xE91E63, size: 44.0),
            (base: 250.0, head: Vec(240, 430), petals: 0x8E24AA, size: 52.0),
            (base: 385.0, head: Vec(400, 490), petals: 0xF4511E, size: 40.0),
        ]
        switch index {
        case 0..<9:
            let flower = flowers[index / 3]
            switch index % 3 {
            case 0:
                // Stem: a gentle curve from the ground up to the flower head.
                let start = Vec(flower.base, ground + 8)
                let end = Vec(flower.head.x, flower.head.y + flower.size * 0.55)
                let control = Vec((start.x + end.x) / 2 - 28, (start.y + end.y) / 2)
                return Shape(
                    path: curve(steps: 300) { s in
                        let u = 1 - s
                        return Vec(
                            u * u * start.x + 2 * u * s * control.x + s * s * end.x,
                            u * u * start.y + 2 * u * s * control.y + s * s * end.y)
                    },
                    style: style(0x2E7D32, width: 5))
            case 1:
                // Petals: a five-petal rose curve r = R·cos(5θ).
                return Shape(
                    path: curve(steps: 1000) { s in
                        let angle = s * Double.pi
                        let radius = flower.size * cos(5 * angle)
                        return Vec(flower.head.x + radius * cos(angle - Double.pi / 2),
                                   flower.head.y + radius * sin(angle - Double.pi / 2))
                    },
                    style: style(flower.petals, width: 4))
            default:
                // The heart of the flower: a single tap, drawn as a dot.
                return Shape(path: [flower.head], style: style(0xFDD835, width: 18))
            }
        default:
            let stars = [(Vec(250, 255), 26.0), (Vec(470, 250), 20.0), (Vec(760, 70), 24.0)]
            let (center, radius) = stars[(index - 9) % stars.count]
            return Shape(path: star(center: center, radius: radius), style: style(0xFFB300, width: 3))
        }
    }

    static func star(center: Vec, radius: Double) -> [Vec] {
        let vertices = (0...10).map { corner -> Vec in
            let angle = -Double.pi / 2 + Double(corner) * Double.pi / 5
            let r = corner % 2 == 0 ? radius : radius * 0.42
            return Vec(center.x + r * cos(angle), center.y + r * sin(angle))
        }
        return polyline(vertices)
    }

    // Replica 2: the house.
    static func house(_ index: Int) -> Shape {
        let left = 560.0, right = 840.0, eaves = 460.0
        switch index {
        case 0:  // walls
            return Shape(
                path: polyline([Vec(left, ground), Vec(left, eaves), Vec(right, eaves), Vec(right, ground), Vec(left - 2, ground)]),
                style: style(0x6D4C41, width: 5))
        case 1:  // roof
            return Shape(
                path: polyline([Vec(left - 25, eaves + 4), Vec((left + right) / 2, 335), Vec(right + 25, eaves + 4), Vec(left - 25, eaves + 4)]),
                style: style(0xC62828, width: 6))
        case 2:  // chimney, standing on the right slope of the roof
            return Shape(
                path: polyline([Vec(770, 400), Vec(770, 345), Vec(800, 345), Vec(800, 418)]),
                style: style(0x5D4037, width: 5))
        case 3:  // smoke curling up from the chimney
            return Shape(
                path: curve(steps: 500) { s in
                    let rise = 150 * s
                    let sway = (8 + 22 * s) * sin(s * 3.2 * tau)
                    return Vec(785 + sway + 30 * s, 332 - rise)
                },
                style: style(0x90A4AE, alpha: 0xB4, width: 3))
        case 4:  // door
            return Shape(
                path: polyline([Vec(670, ground), Vec(670, 530), Vec(730, 530), Vec(730, ground)]),
                style: style(0x8D6E63, width: 5))
        case 5:  // door knob
            return Shape(path: [Vec(720, 578)], style: style(0xFFB300, width: 8))
        case 6, 8:  // windows
            let x = index == 6 ? 590.0 : 760.0
            return Shape(
                path: polyline([Vec(x, 495), Vec(x + 55, 495), Vec(x + 55, 545), Vec(x, 545), Vec(x, 495)]),
                style: style(0x1E88E5, width: 4))
        case 7, 9:  // window crosses: across, back to the middle, then up and down
            let x = index == 7 ? 590.0 : 760.0
            return Shape(
                path: polyline([Vec(x, 520), Vec(x + 55, 520), Vec(x + 27.5, 520), Vec(x + 27.5, 495), Vec(x + 27.5, 545)]),
                style: style(0x1E88E5, width: 3))
        case 10:  // picket fence, one continuous outline
            var vertices: [Vec] = [Vec(860, ground)]
            var x = 860.0
            while x + 18 <= 985 {
                vertices += [Vec(x, 575), Vec(x + 9, 563), Vec(x + 18, 575), Vec(x + 18, ground)]
                x += 18
                if x + 8 <= 985 { vertices.append(Vec(x + 8, ground)); x += 8 }
            }
            vertices += [Vec(x, 590), Vec(860, 590)]
            return Shape(path: polyline(vertices), style: style(0xA1887F, width: 3))
        default:  // a garden path from the door down to the bottom edge, as one outline
            return Shape(
                path: curve(steps: 400) { s in
                    // Down the left edge (s < 0.5), then back up the right edge, widening.
                    let down = s < 0.5 ? s * 2 : 2 - s * 2
                    let side = s < 0.5 ? -1.0 : 1.0
                    let half = 30 + 55 * down * down
                    return Vec(700 + side * half + 5 * sin(down * 7), ground + 4 + 172 * down)
                },
                style: style(0xBCAAA4, width: 4))
        }
    }

    /// A hasty zigzag across the house: the stroke replica 1 erases.
    static func scribble(_ random: inout SplitMix64) -> Shape {
        var vertices: [Vec] = []
        var x = 600.0
        for turn in 0..<9 {
            vertices.append(Vec(x, turn % 2 == 0 ? 380 + random.uniform(0, 30) : 600 - random.uniform(0, 30)))
            x += random.uniform(20, 32)
        }
        return Shape(path: polyline(vertices), style: style(0x212121, width: 8))
    }

    /// Extra strokes: a small star, swirl or loop somewhere in the sky.
    static func doodle(_ random: inout SplitMix64) -> Shape {
        let center = Vec(random.uniform(60, 940), random.uniform(40, 330))
        let size = random.uniform(10, 26)
        let palette: [UInt32] = [0xFFB300, 0x42A5F5, 0xAB47BC, 0xEF5350, 0x26A69A]
        let color = palette[random.index(palette.count)]
        switch random.index(3) {
        case 0:
            return Shape(path: star(center: center, radius: size), style: style(color, width: 3))
        case 1:
            let turns = random.uniform(2, 3.5)
            return Shape(
                path: curve(steps: 400) { s in
                    let angle = s * turns * tau
                    return Vec(center.x + size * s * cos(angle), center.y + size * s * sin(angle))
                },
                style: style(color, width: 3))
        default:
            return Shape(
                path: curve(steps: 300) { s in
                    let angle = s * tau
                    return Vec(center.x + size * 1.6 * sin(angle), center.y + size * sin(2 * angle) / 2)
                },
                style: style(color, width: 3))
        }
    }
}

// MARK: - The pen

private enum Pen {
    struct Sample {
        var x: Double
        var y: Double
        var pressure: Double
        var t: Double
    }

    /// Samples a path as a hand would draw it at 120 Hz: slower at both ends than in the
    /// middle, a little tremor, pressure rising and falling.
    static func samples(along path: [Vec], random: inout SplitMix64) -> [Sample] {
        guard let first = path.first else { return [] }
        var cumulative = [0.0]
        cumulative.reserveCapacity(path.count)
        for (a, b) in zip(path, path.dropFirst()) {
            let length = ((b.x - a.x) * (b.x - a.x) + (b.y - a.y) * (b.y - a.y)).squareRoot()
            cumulative.append(cumulative.last! + length)
        }
        let total = cumulative.last!
        let pressurePhase = random.uniform(0, tau)
        let pressurePeak = random.uniform(0.75, 0.95)

        guard total > 0.5 else {
            // A tap.
            return [Sample(x: round(clampX(first.x), 2), y: round(clampY(first.y), 2),
                           pressure: round(pressurePeak, 2), t: 0)]
        }
        let speed = random.uniform(550, 850)  // canvas units per second
        let intervals = max(2, Int((total / speed * DemoSession.sampleRate).rounded()))
        var samples: [Sample] = []
        samples.reserveCapacity(intervals + 1)
        var segment = 0
        for step in 0...intervals {
            let s = Double(step) / Double(intervals)
            // Speed profile 1 − 0.6·cos(2πs): slow at the ends, quick in the middle.
            let eased = s - 0.6 * sin(tau * s) / tau
            let target = eased * total
            while segment < path.count - 2, cumulative[segment + 1] < target { segment += 1 }
            let span = cumulative[segment + 1] - cumulative[segment]
            let fraction = span > 0 ? min(1, max(0, (target - cumulative[segment]) / span)) : 0
            let a = path[segment], b = path[segment + 1]
            let x = a.x + (b.x - a.x) * fraction + random.uniform(-0.3, 0.3)
            let y = a.y + (b.y - a.y) * fraction + random.uniform(-0.3, 0.3)
            let swell = sin(Double.pi * s)
            var pressure = 0.2 + (pressurePeak - 0.2) * swell.squareRoot()
            pressure += 0.05 * sin(5 * tau * s + pressurePhase) + random.uniform(-0.02, 0.02)
            samples.append(Sample(
                x: round(clampX(x), 2), y: round(clampY(y), 2),
                pressure: round(min(1, max(0.2, pressure)), 2),
                t: round(Double(step) / DemoSession.sampleRate, 3)))
        }
        return samples
    }

    static func clampX(_ x: Double) -> Double { min(DemoSession.canvasWidth, max(0, x)) }
    static func clampY(_ y: Double) -> Double { min(DemoSession.canvasHeight, max(0, y)) }

    static func round(_ value: Double, _ decimals: Int) -> Double {
        let scale = decimals == 2 ? 100.0 : 1000.0
        return (value * scale).rounded() / scale
    }
}
