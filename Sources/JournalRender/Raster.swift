import JournalFormat

/// A picture of packed 8-bit RGB pixels, rows top to bottom: what a video encoder takes as
/// `rawvideo rgb24`. Strokes are drawn as round-capped segments with a one-pixel soft edge and
/// their colour's alpha, blended over what is there.
///
/// A time-lapse frame has to be drawn tens of times a second from up to millions of points;
/// rasterising our own segments, incrementally, is what makes that possible (rendering an
/// SVG per frame through rsvg-convert would redraw every stroke every frame).
public struct RasterImage: Sendable {
    public let width: Int
    public let height: Int
    public private(set) var pixels: [UInt8]

    public init(width: Int, height: Int, background: RGBA) {
        precondition(width > 0 && height > 0, "an image needs at least one pixel")
        self.width = width
        self.height = height
        pixels = []
        pixels.reserveCapacity(width * height * 3)
        for _ in 0..<(width * height) {
            pixels.append(background.red)
            pixels.append(background.green)
            pixels.append(background.blue)
        }
    }

    /// Paints every pixel `background` (its alpha is ignored: a frame is opaque).
    public mutating func fill(_ background: RGBA) {
        let (red, green, blue) = (background.red, background.green, background.blue)
        pixels.withUnsafeMutableBufferPointer { buffer in
            var index = 0
            while index < buffer.count {
                buffer[index] = red
                buffer[index + 1] = green
                buffer[index + 2] = blue
                index += 3
            }
        }
    }

    /// The pixel at column `x`, row `y`.
    public func pixel(x: Int, y: Int) -> (red: UInt8, green: UInt8, blue: UInt8) {
        let index = (y * width + x) * 3
        return (pixels[index], pixels[index + 1], pixels[index + 2])
    }

    /// Coverage of the shape being drawn, per pixel (zero outside it), and which pixels it
    /// touched: a translucent stroke is blended once where its segments overlap, as an SVG
    /// stroke is, not once per segment.
    private var coverage: [Float] = []
    private var touched: [Int32] = []

    /// A segment from `a` to `b` (pixel coordinates, pixel centres at +0.5), `radius` pixels
    /// either side, round ends; a point when `a == b`. Added to the current shape; nothing
    /// shows until `paintShape`.
    public mutating func addSegment(from a: (x: Double, y: Double), to b: (x: Double, y: Double), radius: Double) {
        guard radius.isFinite, a.x.isFinite, a.y.isFinite, b.x.isFinite, b.y.isFinite else { return }
        if coverage.isEmpty { coverage = [Float](repeating: 0, count: width * height) }
        let reach = radius + 1
        // Compared as doubles first: a point far outside the picture must not overflow Int.
        let minX = max(min(a.x, b.x) - reach, 0), maxX = min(max(a.x, b.x) + reach, Double(width - 1))
        let minY = max(min(a.y, b.y) - reach, 0), maxY = min(max(a.y, b.y) + reach, Double(height - 1))
        guard minX <= maxX, minY <= maxY else { return }
        let left = Int(minX.rounded(.down)), right = Int(maxX.rounded(.up))
        let top = Int(minY.rounded(.down)), bottom = Int(maxY.rounded(.up))
        guard left <= right, top <= bottom else { return }
        let dx = b.x - a.x, dy = b.y - a.y
        let lengthSquared = dx * dx + dy * dy
        let inverseLength = lengthSquared > 0 ? 1 / lengthSquared : 0
        let outer = (radius + 0.5) * (radius + 0.5)
        let rowWidth = width
        coverage.withUnsafeMutableBufferPointer { mask in
            for y in top...bottom {
                let py = Double(y) + 0.5 - a.y
                for x in left...right {
                    let px = Double(x) + 0.5 - a.x
                    let t = min(max((px * dx + py * dy) * inverseLength, 0), 1)
                    let ex = px - t * dx, ey = py - t * dy
                    let distanceSquared = ex * ex + ey * ey
                    guard distanceSquared < outer else { continue }
                    // Full inside the radius, fading to nothing half a pixel beyond it.
                    let covered = Float(min(max(radius + 0.5 - distanceSquared.squareRoot(), 0), 1))
                    let index = y * rowWidth + x
                    let before = mask[index]
                    guard covered > before else { continue }
                    if before == 0 { touched.append(Int32(index)) }
                    mask[index] = covered
                }
            }
        }
    }

    /// Blends the current shape over the picture in `color` (its alpha included), and starts
    /// a new one.
    public mutating func paintShape(_ color: RGBA) {
        guard !touched.isEmpty else { return }
        let alpha = Float(color.alpha) / 255
        let (red, green, blue) = (Float(color.red), Float(color.green), Float(color.blue))
        coverage.withUnsafeMutableBufferPointer { mask in
            pixels.withUnsafeMutableBufferPointer { buffer in
                for pixel in touched {
                    let index = Int(pixel)
                    let amount = mask[index] * alpha
                    mask[index] = 0
                    let keep = 1 - amount
                    let at = index * 3
                    buffer[at] = UInt8((Float(buffer[at]) * keep + red * amount).rounded())
                    buffer[at + 1] = UInt8((Float(buffer[at + 1]) * keep + green * amount).rounded())
                    buffer[at + 2] = UInt8((Float(buffer[at + 2]) * keep + blue * amount).rounded())
                }
            }
        }
        touched.removeAll(keepingCapacity: true)
    }
}
