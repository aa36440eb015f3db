import Crypto
import JournalFormat
import JournalPlatform

/// The hash object stores report for an object's bytes: S3's ETag is the MD5 of anything sent
/// in one part. Used only to tell whether the store's copy is the bytes a name stands for
/// (the name itself is a SHA-256), never to name or trust anything.
enum ObjectHash {
    static func md5(ofFileAt path: String) throws(IOError) -> String {
        Hex.bytes(Array(Insecure.MD5.hash(data: try FileSystem.readFile(path))))
    }

    static func isMD5(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy(Hex.isLowercaseHexDigit)
    }
}
