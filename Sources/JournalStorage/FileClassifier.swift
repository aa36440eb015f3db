import JournalFormat

/// What a name found in a shared `replicas/<replica>/` folder is, decided by name alone.
public enum FileClassification: Equatable, Sendable {
    /// A sealed segment under its canonical name.
    case segment(SegmentName)
    /// A copy a sync tool made of a segment when it saw two versions (Syncthing's
    /// `*.sync-conflict-*`, Dropbox's "conflicted copy"): read as an ordinary extra segment.
    case conflictCopy
    /// Someone else's work in progress or placeholder: never read, reported with the reason.
    case foreign(String)
}

public enum FileClassifier {
    /// What sync prefixes to a shared copy it moved aside because its bytes do not match its name.
    public static let damagedPrefix = ".damaged-"

    public static func classify(_ name: String) -> FileClassification {
        if let segment = SegmentName(fileName: name) { return .segment(segment) }
        if name.hasPrefix(".tmp-") { return .foreign("a StrokeJournal temporary (a copy in progress or interrupted)") }
        if name.hasPrefix(damagedPrefix) {
            return .foreign("a copy whose bytes did not match its name, moved aside by a sync (safe to delete)")
        }
        if name.hasPrefix(".syncthing.") && name.hasSuffix(".tmp") { return .foreign("a Syncthing temporary") }
        if name.hasPrefix("~syncthing~") { return .foreign("a Syncthing temporary") }
        if name.hasPrefix(".unison.") { return .foreign("a Unison temporary") }
        if name == ".~tmp~" { return .foreign("Syncthing's temporary folder") }
        if name == ".rsync-partial" { return .foreign("rsync's partial-transfer folder") }
        if name.hasSuffix(".icloud") { return .foreign("an iCloud placeholder (not downloaded)") }
        if isRsyncTemporary(name) { return .foreign("an rsync temporary (a transfer in progress or interrupted)") }
        if name.hasSuffix("." + FormatV1.sealedExtension)
            && (name.contains(".sync-conflict-") || name.contains("conflicted copy")) {
            return .conflictCopy
        }
        if name.hasPrefix(".") { return .foreign("a hidden file") }
        return .foreign("not a segment name")
    }

    /// rsync writes `.<name>.XXXXXX` (six random characters) before renaming into place.
    static func isRsyncTemporary(_ name: String) -> Bool {
        guard name.hasPrefix("."), let dot = name.lastIndex(of: ".") , dot != name.startIndex else { return false }
        let suffix = name[name.index(after: dot)...]
        return suffix.count == 6 && suffix.allSatisfy { $0.isLetter || $0.isNumber }
    }
}
