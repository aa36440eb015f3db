import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JournalPlatform
import JournalStorage

/// Seals this journal's caches (the snapshot and its keyframes under `local/snapshots/`) with a
/// key only its own `local/` holds, so that a cache is used only if this journal wrote it.
///
/// A CRC proves a file undamaged, not honest: a snapshot or keyframes file changed on purpose,
/// its CRC recomputed, passed every structural check and changed what `digest`, `strokes` and a
/// moment printed (found by `Tools/ci/hostile/hostile_inputs.py`; a crafted keyframes file by
/// an outside check). Each file ends with an HMAC-SHA256 of everything before it (and, for a
/// snapshot, of the membership fingerprint it was folded under), keyed by `local/cache.key`:
/// 32 random bytes, never synced, readable by the owner only, made with the first cache. A
/// file without a valid seal, or a journal whose key is missing or unreadable, has no cache:
/// the drawing is replayed in full, as for any damaged cache. Whoever can read `local/` can
/// forge a seal, as they can sign segments with `local/replica.key`.
struct CacheSeal {
    static let keyFileName = "cache.key"
    static let tagLength = 32
    private let key: SymmetricKey

    static func keyPath(_ directory: JournalDirectory) -> String { directory.localPath + "/" + keyFileName }

    /// The journal's key, if it has a readable one.
    static func load(_ directory: JournalDirectory) -> CacheSeal? {
        guard let bytes = try? FileSystem.readFile(keyPath(directory)), bytes.count == 32 else { return nil }
        return CacheSeal(key: SymmetricKey(data: bytes))
    }

    /// The journal's key, made now if it has none: 0600 from its first byte, and created only
    /// where none exists (two writers making one at once both use the one that won).
    static func loadOrCreate(_ directory: JournalDirectory) throws(IOError) -> CacheSeal {
        if let seal = load(directory) { return seal }
        do throws(IOError) {
            try DirectoryHandle.open(directory.localPath)
                .writeNewFileAtomically(name: keyFileName, bytes: ProcessInfoLite.randomBytes(32), ownerOnly: true)
        } catch where error.isExists {}
        guard let seal = load(directory) else { throw IOError("read", path: keyPath(directory), code: EIO) }
        return seal
    }

    /// `bytes` followed by their seal (over `bytes` and `context`).
    func sealed(_ bytes: [UInt8], context: [UInt8] = []) -> [UInt8] {
        bytes + tag(bytes[...], context: context)
    }

    /// What `sealed` sealed, if its seal is this key's over it and `context`.
    func opened(_ file: [UInt8], context: [UInt8] = []) -> [UInt8]? {
        guard file.count >= Self.tagLength else { return nil }
        let body = file[..<(file.count - Self.tagLength)]
        // Compared in constant time: how far a guess matched says nothing.
        var difference: UInt8 = 0
        for (expected, stored) in zip(tag(body, context: context), file[(file.count - Self.tagLength)...]) { difference |= expected ^ stored }
        return difference == 0 ? Array(body) : nil
    }

    private func tag(_ body: ArraySlice<UInt8>, context: [UInt8]) -> [UInt8] {
        var code = HMAC<SHA256>(key: key)
        code.update(data: body)
        code.update(data: context)
        return Array(code.finalize())
    }
}
