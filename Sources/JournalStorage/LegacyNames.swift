import JournalFormat
import JournalPlatform

extension JournalDirectory {
    /// Gives this journal's sealed segments that still carry version 1 names (a CRC-32 that
    /// anyone can forge) their version 2 names (SHA-256), by link and unlink: no byte is
    /// rewritten. Sync calls it first, so that what it compares and publishes by name is
    /// named by content. A file that does not verify keeps its name and is returned as a
    /// problem (verify and replay report it too).
    public func upgradeLegacyNames() -> [Problem] {
        var problems: [Problem] = []
        for file in listSealed().sealed where !file.name.identifiesContents {
            let scan = SegmentScanner.scan(path: file.path, sealed: true)
            switch SegmentImporter.verify(scan, path: file.path, replica: file.replica, claimedName: file.name) {
            case .failure(let problem):
                problems.append(problem)
            case .success(let name):
                let target = segmentPath(file.replica, name)
                do throws(IOError) {
                    if !FileSystem.exists(target) { try FileSystem.link(file.path, to: target) }
                    try FileSystem.remove(file.path)
                    try FileSystem.syncDirectory(replicaPath(file.replica))
                } catch {
                    problems.append(Problem(.unreadable, file: file.path, replica: file.replica,
                                            reason: "cannot give it its version 2 name \(name.fileName): \(error)"))
                }
            }
        }
        return problems
    }
}
