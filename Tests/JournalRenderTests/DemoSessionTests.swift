import JournalFormat
import JournalSamples
import JournalTestSupport
import Testing

@testable import JournalReplay

@Suite(.ownThreads) struct DemoSessionTests {
    /// The strokes each replica creates (ids of its points, in first-seen order).
    private func createdStrokes(_ payloads: [Payload]) -> [StrokeID] {
        var seen = Set<StrokeID>()
        var order: [StrokeID] = []
        for case .point(let sample) in payloads where seen.insert(sample.stroke).inserted {
            order.append(sample.stroke)
        }
        return order
    }

    @Test func isDeterministic() {
        #expect(DemoSession.replicas() == DemoSession.replicas())
        #expect(DemoSession.replicas(count: 4, strokesPerReplica: 15, seed: 7)
            == DemoSession.replicas(count: 4, strokesPerReplica: 15, seed: 7))
        #expect(DemoSession.replicas(seed: 1) != DemoSession.replicas(seed: 2))
    }

    @Test func everyPayloadValidates() throws {
        for replica in DemoSession.replicas() {
            for payload in replica { try payload.validate() }
        }
    }

    @Test func pointsLookLikeAPen() throws {
        var total = 0
        for replica in DemoSession.replicas() {
            var lastT: [StrokeID: Double] = [:]
            for case .point(let sample) in replica {
                total += 1
                #expect((0...DemoSession.canvasWidth).contains(sample.x))
                #expect((0...DemoSession.canvasHeight).contains(sample.y))
                #expect(sample.x == (sample.x * 100).rounded() / 100)
                #expect(sample.y == (sample.y * 100).rounded() / 100)
                let pressure = try #require(sample.pressure)
                #expect((0.2...1.0).contains(pressure))
                #expect(pressure == (pressure * 100).rounded() / 100)
                let t = try #require(sample.t)
                #expect(t == (t * 1000).rounded() / 1000)
                if let previous = lastT[sample.stroke] {
                    #expect(abs(t - previous - 1 / 120) < 0.0011)
                } else {
                    #expect(t == 0)
                }
                lastT[sample.stroke] = t
            }
        }
        #expect(total > 2000)
        #expect(total < 10000)
    }

    @Test func eachReplicaHasPointsAndEnds() {
        let replicas = DemoSession.replicas()
        #expect(replicas.count == 3)
        for replica in replicas {
            let strokes = createdStrokes(replica)
            #expect(strokes.count == 12)
            var ended = Set<StrokeID>()
            var closed = Set<StrokeID>()
            for payload in replica {
                switch payload {
                case .point(let sample):
                    // A stroke's points come before its end, all together.
                    #expect(!closed.contains(sample.stroke))
                case .end(let id):
                    #expect(ended.insert(id).inserted)
                    closed.insert(id)
                case .clear:
                    Issue.record("the demo must not clear")
                default:
                    break
                }
            }
            #expect(ended == Set(strokes))
        }
    }

    @Test func strokeIdsAreUniqueAcrossReplicas() {
        let all = DemoSession.replicas(count: 5, strokesPerReplica: 20).flatMap(createdStrokes)
        #expect(all.count == 100)
        #expect(Set(all).count == all.count)
    }

    @Test func undoRedoAndEraseAreThere() throws {
        let replicas = DemoSession.replicas()
        let own = createdStrokes(replicas[0])

        // Replica 0 undoes one of its own strokes, then later redoes it.
        let undoIndex = try #require(replicas[0].firstIndex { if case .undo = $0 { return true } else { return false } })
        let redoIndex = try #require(replicas[0].firstIndex { if case .redo = $0 { return true } else { return false } })
        guard case .undo(let undone) = replicas[0][undoIndex], case .redo(let redone) = replicas[0][redoIndex] else {
            Issue.record("not an undo/redo")
            return
        }
        #expect(undone == redone)
        #expect(own.contains(undone))
        #expect(undoIndex < redoIndex)
        // Something is drawn in between.
        #expect(replicas[0][undoIndex..<redoIndex].contains { $0.kind == .point })

        // Replica 1 erases a stroke of replica 2, and none of its own.
        let erased = replicas[1].compactMap { payload -> StrokeID? in
            if case .erase(let id) = payload { return id } else { return nil }
        }
        #expect(erased.count == 1)
        #expect(createdStrokes(replicas[2]).contains(erased[0]))
        #expect(!createdStrokes(replicas[1]).contains(erased[0]))

        // Exactly those three control events.
        let controls = replicas.joined().filter { $0.kind != .point && $0.kind != .end }
        #expect(controls.count == 3)
    }

    @Test func otherShapesStayWellFormed() throws {
        #expect(DemoSession.replicas(count: 0).isEmpty)
        #expect(DemoSession.replicas(count: 2, strokesPerReplica: 0) == [[], []])

        let one = DemoSession.replicas(count: 1, strokesPerReplica: 1)
        #expect(one.count == 1)
        #expect(one[0].contains { $0.kind == .undo } && one[0].contains { $0.kind == .redo })
        #expect(!one[0].contains { $0.kind == .erase })  // nobody else to erase

        // Two replicas: replica 1 erases replica 0's last stroke.
        let two = DemoSession.replicas(count: 2, strokesPerReplica: 4)
        let target = try #require(createdStrokes(two[0]).last)
        #expect(two[1].contains(.erase(target)))

        for replica in DemoSession.replicas(count: 5, strokesPerReplica: 16) {
            #expect(createdStrokes(replica).count == 16)
            for payload in replica { try payload.validate() }
        }
    }
}
