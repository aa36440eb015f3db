import JournalFormat
import JournalPlatform
@testable import JournalReplay
import JournalStorage
import JournalTestSupport
import Testing

/// Keyframes (docs/HISTORY.md, "Keyframes"): the drawing at any moment cut back from the
/// snapshot is the history's drawing at that moment, and keyframes that no longer describe
/// the journal are never used.
@Suite struct KeyframeTests {
    /// Three replicas acting on their own and each other's strokes: points whose style
    /// changes, ends, undo, redo, erase and clears, interleaved.
    static func events(count: Int = 500, seed: UInt64 = 5) -> [Event] {
        var writers = (0..<3).map { EventGenerator(seed: seed * 10 + UInt64($0)) }
        var random = SeededGenerator(seed: seed)
        var events: [Event] = []
        for _ in 0..<count {
            let writer = Int(random.next() % 3)
            let owner = Int(random.next() % 3)
            guard random.next() % 4 == 0, let stroke = writers[owner].strokes.randomElement(using: &random) else {
                events.append(writers[writer].arbitraryEvent())
                continue
            }
            let point = PointSample(stroke: stroke, x: Double(random.next() % 1000), y: 1.5, pressure: nil, t: nil,
                                    style: Style(color: RGBA(rawValue: 0xFF00_00FF), width: 3))
            let payloads: [Payload] = [.undo(stroke), .redo(stroke), .erase(stroke), .end(stroke), .point(point), .point(point)]
            events.append(writers[writer].event(payloads[Int(random.next() % UInt64(payloads.count))]))
        }
        return events
    }

    /// The first `count` events, and the rest as each writer would stamp them after syncing
    /// all of the first: their clocks above all the first hold.
    static func split(_ events: [Event], at count: Int) -> (first: [Event], later: [Event]) {
        let first = Array(events[..<count])
        let above = first.map(\.lamport).max()!
        return (first, events[count...].map { event in var event = event; event.lamport += above; return event })
    }

    /// Adds `events` to a journal as new segments, continuing each replica's seqs.
    static func add(_ events: [Event], to journal: JournalDirectory) throws {
        for replica in Set(events.map(\.id.replica)) {
            let own = events.filter { $0.id.replica == replica }.sorted { $0.id.seq < $1.id.seq }
            try FileSystem.createDirectory(journal.replicaPath(replica))
            let bytes = SegmentEncoder.segment(replica: replica, events: own)
            let name = SegmentName(firstSeq: own.first!.id.seq, lastSeq: own.last!.id.seq, contents: bytes)
            let descriptor = try FileDescriptor.open(journal.segmentPath(replica, name), .createNew)
            try descriptor.writeAll(bytes)
            descriptor.close()
        }
    }

    @Test func everyMomentCutBackFromAKeyframeIsTheHistorysDrawing() throws {
        let temp = TemporaryDirectory("keyframes-every")
        defer { temp.remove() }
        let journal = try HistoryTests.journal(at: temp.path + "/j", Self.events(), perSegment: 40)
        let set = SegmentSet.load(journal)
        let history = History(set)
        let total = history.events.count
        var report = ReplayReport()
        let snapshot = try #require(Replay.fullSnapshot(set, report: &report, keyframeInterval: 7))
        let keyframes = try #require(snapshot.keyframes)
        #expect(keyframes.frames.map(\.events) == Array(stride(from: 7, to: total, by: 7)))
        #expect(keyframes.frames.contains { !$0.changes.isEmpty }, "the session has strokes that change after a keyframe")
        for count in 0...(total + 1) {
            let cut = Replay.drawing(ofFirst: count, set, snapshot: snapshot, keyframes: keyframes, report: ReplayReport())
            let then = try #require(cut, "at \(count)")
            #expect(then.events == min(count, total), "at \(count)")
            #expect(then.drawing == history.drawing(ofFirst: min(count, total)), "at \(count)")
        }

        // Through the files: the snapshot and its keyframes as written, and the moment's
        // choice between them and a merge from the start.
        try SnapshotStore.write(snapshot, to: journal)
        let stored = try #require(SnapshotStore.newest(journal, for: set))
        let read = try #require(SnapshotStore.keyframes(journal, for: stored))
        #expect(read.frames.map(\.events) == keyframes.frames.map(\.events))
        #expect(read.frames.map(\.changes.count) == keyframes.frames.map(\.changes.count))
        for count in stride(from: 0, through: total, by: 3) {
            let fromSnapshot = Replay.drawingFromSnapshot(ofFirst: count, set, directory: journal, buildAbove: nil)
            let then = try #require(fromSnapshot, "at \(count)")
            #expect(then.drawing == history.drawing(ofFirst: count), "at \(count)")
        }
    }

    /// A wall-clock moment counted from the keyframes' wall census holds exactly the events
    /// that every event's wall time says, wherever the time falls (before all, between, on and
    /// after each time, inside intervals whose times straddle it), with clocks that follow
    /// the wall and clocks that do not, and with events the snapshot lacks on top.
    @Test(arguments: [false, true])
    func aWallClockMomentCountedFromTheCensusHoldsWhatEveryWallTimeSays(clocksOff: Bool) throws {
        let temp = TemporaryDirectory("keyframes-wall-census")
        defer { temp.remove() }
        var random = SeededGenerator(seed: clocksOff ? 11 : 12)
        // Walls rise with the total order, a few milliseconds apart and often equal; with
        // `clocksOff` one replica's clock runs ten seconds behind and jumps about.
        var events = Self.events(count: 400).sorted { ($0.lamport, $0.id.replica, $0.id.seq) < ($1.lamport, $1.id.replica, $1.id.seq) }
        let laggard = events[0].id.replica
        var wall: Int64 = 1_790_000_000_000
        for index in events.indices {
            wall += Int64(random.next() % 4)
            events[index].wallTime = clocksOff && events[index].id.replica == laggard ? wall - 10_000 + Int64(random.next() % 9_000) : wall
        }
        let later = Array(events.suffix(60))
        let journal = try HistoryTests.journal(at: temp.path + "/j", Array(events.dropLast(60)), perSegment: 40)
        var report = ReplayReport()
        try SnapshotStore.write(try #require(Replay.fullSnapshot(SegmentSet.load(journal), report: &report, keyframeInterval: 16)), to: journal)
        for withLater in [false, true] {
            if withLater { try Self.add(later, to: journal) }
            let set = SegmentSet.load(journal)
            let census = try #require(WallCensus(journal, set, snapshot: SnapshotStore.newestFile(journal, for: set)), "no census for the snapshot's keyframes")
            #expect(census.hasFreshEvents == withLater)
            var unused = ReplayReport()
            let every = WallTimes(Replay.uniqueWallTimes(set, report: &unused).times)
            let walls = Set(events.map(\.wallTime))
            var moments: [Moment] = [.wallTime(.min), .wallTime(.max), .beforeEnd(milliseconds: 0), .beforeEnd(milliseconds: .max), .beforeEnd(milliseconds: -5)]
            for (index, time) in walls.sorted().enumerated() where index % 5 == 0 {
                moments += [.wallTime(time - 1), .wallTime(time), .wallTime(time + 1)]
            }
            for back in stride(from: Int64(0), through: 12_000, by: 250) { moments.append(.beforeEnd(milliseconds: back)) }
            for moment in moments {
                #expect(census.count(at: moment) == every.count(at: moment), "\(moment), later events: \(withLater)")
            }
            // And the drawing at such a moment is the history's at that count.
            let history = History(set)
            for moment in [Moment.beforeEnd(milliseconds: 1_000), .beforeEnd(milliseconds: 5_000), .wallTime(events[200].wallTime)] {
                let then = Replay.drawing(at: moment, in: journal)
                #expect(then.events == every.count(at: moment))
                #expect(then.drawing == history.drawing(ofFirst: then.events), "\(moment)")
            }
        }
    }

    /// Replicas recorded one after another, then merged: their events interleave in the
    /// total order (each one's clocks start at 1), so every keyframe interval spans all their
    /// wall times, but each replica's own times follow its seqs. The census counts per
    /// replica, reads the events of at most a few (interval, replica) pairs, and still gives
    /// what every wall time says.
    @Test func aCensusOfReplicasRecordedOneAfterAnotherReadsOneReplica() throws {
        let temp = TemporaryDirectory("keyframes-census-replicas")
        defer { temp.remove() }
        var events = Self.events(count: 600, seed: 21)
        let replicas = Array(Set(events.map(\.id.replica))).sorted()
        for index in events.indices {
            let order = replicas.firstIndex(of: events[index].id.replica)!
            events[index].wallTime = 1_790_000_000_000 + Int64(order) * 1_000_000 + Int64(events[index].id.seq) * 3
        }
        let journal = try HistoryTests.journal(at: temp.path + "/j", events, perSegment: 40)
        var report = ReplayReport()
        try SnapshotStore.write(try #require(Replay.fullSnapshot(SegmentSet.load(journal), report: &report, keyframeInterval: 16)), to: journal)
        let set = SegmentSet.load(journal)
        let census = try #require(WallCensus(journal, set, snapshot: SnapshotStore.newestFile(journal, for: set)))
        var unused = ReplayReport()
        let every = WallTimes(Replay.uniqueWallTimes(set, report: &unused).times)
        var mostRead = 0
        for time in Set(events.map(\.wallTime)).sorted() {
            for moment in [Moment.wallTime(time - 1), .wallTime(time)] {
                #expect(census.count(at: moment) == every.count(at: moment), "\(moment)")
            }
            mostRead = max(mostRead, census.plan(time).straddling.reduce(0) { $0 + $1.count })
        }
        // Every interval straddles the middle of the session; one replica's events are read.
        let middle = 1_790_000_000_000 + 1_000_000 + Int64(events.filter { $0.id.replica == replicas[1] }.count) * 3 / 2
        #expect(census.plan(middle).straddling.enumerated().allSatisfy { $0.offset == 1 || $0.element.isEmpty })
        #expect(mostRead <= 2, "the census read \(mostRead) (interval, replica) pairs for one moment")
    }

    @Test func keyframesApplyWhileNewEventsComeAfterTheSnapshotAndNotOnceOneSortsBefore() throws {
        let temp = TemporaryDirectory("keyframes-growth")
        defer { temp.remove() }
        let events = Self.events(count: 400, seed: 9)
        let (first, later) = Self.split(events, at: 300)
        let journal = try HistoryTests.journal(at: temp.path + "/j", first, perSegment: 60)
        var report = ReplayReport()
        var snapshot = try #require(Replay.fullSnapshot(SegmentSet.load(journal), report: &report, keyframeInterval: 16))
        try SnapshotStore.write(snapshot, to: journal)

        try Self.add(later, to: journal)
        var set = SegmentSet.load(journal)
        var history = History(set)
        #expect(history.events.count == events.count)
        for count in stride(from: 0, through: events.count + 1, by: 5) {
            let fromSnapshot = Replay.drawingFromSnapshot(ofFirst: count, set, directory: journal, buildAbove: nil)
            let then = try #require(fromSnapshot, "at \(count)")
            #expect(then.events == min(count, events.count))
            #expect(then.drawing == history.drawing(ofFirst: min(count, events.count)), "at \(count)")
        }

        // A new machine whose clock is far behind: its event sorts first, and every position
        // of the snapshot moves by one. The keyframes no longer apply; the merge still answers.
        var late = EventGenerator(seed: 77)
        try Self.add([late.event(.erase(events.compactMap(\.payload.stroke).first!))], to: journal)
        set = SegmentSet.load(journal)
        history = History(set)
        let stale = Replay.drawingFromSnapshot(ofFirst: 200, set, directory: journal, buildAbove: nil)
        #expect(stale == nil)
        for count in [1, 150, 299, 300, 401] {
            let then = Replay.drawing(at: .events(count), in: journal)
            #expect(then.drawing == history.drawing(ofFirst: min(count, history.events.count)), "at \(count)")
        }

        // Keyframes name their snapshot: beside another one they are not read, and a snapshot
        // written without keyframes removes them.
        snapshot.eventCount += 1
        let other = snapshot.encoded()
        try FileSystem.writeAtomically(other, to: journal.snapshotsPath + "/latest.sjsnap")
        let decoded = try #require(Snapshot.decode(other))
        #expect(SnapshotStore.keyframes(journal, for: decoded) == nil)
        snapshot.keyframes = nil
        try SnapshotStore.write(snapshot, to: journal)
        #expect(FileSystem.linkStatus(SnapshotStore.keyframesPath(journal)) == nil)
    }

    @Test func aDamagedKeyframeFileIsIgnored() throws {
        let temp = TemporaryDirectory("keyframes-damaged")
        defer { temp.remove() }
        let journal = try HistoryTests.journal(at: temp.path + "/j", Self.events(count: 200, seed: 3), perSegment: 50)
        let set = SegmentSet.load(journal)
        var report = ReplayReport()
        try SnapshotStore.write(try #require(Replay.fullSnapshot(set, report: &report, keyframeInterval: 10)), to: journal)
        let snapshot = try #require(SnapshotStore.newest(journal, for: set))
        let path = SnapshotStore.keyframesPath(journal)
        let bytes = try FileSystem.readFile(path)
        #expect(SnapshotStore.keyframes(journal, for: snapshot) != nil)
        for offset in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 40)) {
            try FileSystem.writeAtomically(Damage.flipByte(bytes, at: offset), to: path)
            #expect(SnapshotStore.keyframes(journal, for: snapshot) == nil, "a flipped bit at \(offset)")
        }
        try FileSystem.writeAtomically(Array(bytes.dropLast(5)), to: path)
        #expect(SnapshotStore.keyframes(journal, for: snapshot) == nil)
    }

    /// A keyframe file whose content was changed on purpose and its CRC recomputed (an outside
    /// check got a wrong drawing at 1 moment of 60 this way): whatever field changed, it is
    /// ignored unless sealed with this journal's key, and every moment is the history's.
    @Test func aCraftedKeyframeFileIsIgnoredWhateverFieldItChanges() throws {
        let temp = TemporaryDirectory("keyframes-crafted")
        defer { temp.remove() }
        let journal = try HistoryTests.journal(at: temp.path + "/j", Self.events(count: 300, seed: 8), perSegment: 50)
        let set = SegmentSet.load(journal)
        let history = History(set)
        var report = ReplayReport()
        try SnapshotStore.write(try #require(Replay.fullSnapshot(set, report: &report, keyframeInterval: 20)), to: journal)
        let snapshot = try #require(SnapshotStore.newest(journal, for: set))
        let honest = try #require(SnapshotStore.keyframes(journal, for: snapshot))
        let frame = try #require(honest.frames.first { !$0.changes.isEmpty && $0.created > 0 && $0.latestClear != nil }
            ?? honest.frames.first { !$0.changes.isEmpty && $0.created > 0 })
        let index = try #require(honest.frames.firstIndex { $0.events == frame.events })
        // An attacker's key: another journal's.
        let stranger = try JournalDirectory.create(at: temp.path + "/stranger")
        let forger = try CacheSeal.loadOrCreate(stranger)
        let own = try #require(CacheSeal.load(journal))

        var crafts: [(field: String, frame: Keyframes.Frame)] = []
        func craft(_ field: String, _ change: (inout Keyframes.Frame) -> Void) {
            var crafted = frame
            change(&crafted)
            crafts.append((field, crafted))
        }
        craft("events") { $0.events -= 1 }
        craft("lastKey") { $0.lastKey.seq += 1 }
        craft("cursors") { $0.cursors[0] = $0.cursors[0] == 0 ? 1 : $0.cursors[0] - 1 }
        craft("created") { $0.created -= 1 }
        craft("latestClear") { $0.latestClear = $0.latestClear == nil ? $0.lastKey : nil }
        craft("change slot") { frame in
            // Another slot, still in slot order (the file's gaps are unsigned).
            let last = frame.changes.count - 1, slot = frame.changes[last].slot
            let previous = last > 0 ? frame.changes[last - 1].slot : -1
            frame.changes[last].slot = Int(slot) + 1 < snapshot.strokeCount ? slot + 1 : (slot - 1 > previous ? slot - 1 : slot)
        }
        craft("change points") { $0.changes[0].points = max(0, $0.changes[0].points - 1) }
        craft("change ended") { $0.changes[0].ended.toggle() }
        craft("change visibility") { $0.changes[0].visibility = $0.changes[0].visibility == nil ? ($0.lastKey, false) : nil }
        craft("a change dropped") { $0.changes.removeFirst() }

        let path = SnapshotStore.keyframesPath(journal)
        for (field, crafted) in crafts {
            var keyframes = honest
            keyframes.frames[index] = crafted
            let bytes = keyframes.encoded(snapshotCheck: snapshot.headerCheck, replicaCount: snapshot.replicas.count)
            // Structurally whole: only the seal can refuse it.
            #expect(Keyframes.decode(bytes, snapshotCheck: snapshot.headerCheck, replicaCount: snapshot.replicas.count,
                                     strokes: snapshot.strokeCount, created: snapshot.state.creationOrder.count,
                                     events: snapshot.eventCount) != nil, "\(field)")
            for sealed in [bytes, forger.sealed(bytes)] {
                try FileSystem.writeAtomically(sealed, to: path)
                #expect(SnapshotStore.keyframes(journal, for: snapshot) == nil, "crafted \(field) was read")
                for count in [frame.events, frame.events + 1] {
                    #expect(Replay.drawing(at: .events(count), in: journal).drawing == history.drawing(ofFirst: count), "crafted \(field), at \(count)")
                }
            }
            // The same bytes sealed with the journal's own key are read: the seal is what refused them.
            try FileSystem.writeAtomically(own.sealed(bytes), to: path)
            #expect(SnapshotStore.keyframes(journal, for: snapshot) != nil, "\(field)")
        }
    }

    /// A journal with no snapshot gets one, with keyframes, at its first moment (above the
    /// size where that pays; the test lowers it).
    @Test func theFirstMomentOfALargeJournalBuildsTheKeyframes() throws {
        let temp = TemporaryDirectory("keyframes-build")
        defer { temp.remove() }
        let journal = try HistoryTests.journal(at: temp.path + "/j", Self.events(count: 300, seed: 4), perSegment: 50)
        let set = SegmentSet.load(journal)
        let history = History(set)
        let built = Replay.drawingFromSnapshot(ofFirst: 250, set, directory: journal, buildAbove: 0)
        let then = try #require(built)
        #expect(then.drawing == history.drawing(ofFirst: 250))
        #expect(FileSystem.linkStatus(SnapshotStore.keyframesPath(journal)) != nil)
        let fromFiles = Replay.drawingFromSnapshot(ofFirst: 251, set, directory: journal, buildAbove: nil)
        let again = try #require(fromFiles)
        #expect(again.drawing == history.drawing(ofFirst: 251))
    }
}
