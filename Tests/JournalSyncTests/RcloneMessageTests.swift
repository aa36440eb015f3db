@testable import JournalSync
import Testing

/// rclone's messages, as `journal sync` shows them: its noise out, the known failures said in
/// words first, a secret in a refused address never repeated.
@Suite struct RcloneMessageTests {
    let s3: ObjectStoreAddress

    init() throws {
        s3 = try #require(try ObjectStoreAddress(parsing: "s3://boards/poster"))
    }

    @Test func theConfigurationNoticeAndTimestampsGo() {
        let raw = """
            2026/11/29 11:00:01 NOTICE: Config file "/root/.config/rclone/rclone.conf" not found - using defaults
            2026/11/29 11:00:02 ERROR : : error listing: directory not found
            """
        #expect(RcloneTransport.explained(raw, address: s3, endpoint: nil) == "ERROR : : error listing: directory not found")
    }

    @Test func knownFailuresAreSaidInWordsFirst() {
        let cases: [(String, String)] = [
            ("2026/11/29 11:00:02 Failed to create file system: NoCredentialProviders: no valid providers in chain",
             "no credentials for s3://boards/poster: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
            ("couldn't load CA bundle: LoadCustomCABundleError", "no credentials for s3://boards/poster"),
            ("ERROR : error listing: InvalidAccessKeyId: The AWS Access Key Id you provided does not exist",
             "the store at http://127.0.0.1:9 refused the credentials"),
            ("ERROR : dial tcp 127.0.0.1:9: connect: connection refused",
             "nothing answers at the store at http://127.0.0.1:9: is it running"),
        ]
        for (raw, first) in cases {
            let shown = RcloneTransport.explained(raw, address: s3, endpoint: "http://127.0.0.1:9")
            #expect(shown.hasPrefix(first), "\(shown)")
            // rclone's own words still follow (without their date), for what the hint does not say.
            #expect(shown.hasSuffix("\n" + (raw.hasPrefix("2026/") ? String(raw.dropFirst(20)) : raw)), "\(shown)")
        }
        #expect(RcloneTransport.explained("something new", address: s3, endpoint: nil) == "something new")
    }

    @Test func anAddressWithSettingsIsRefusedWithoutRepeatingThem() {
        for text in ["rclone::s3,secret_access_key=TOPSECRET:bucket", "rclone:r2,access_key_id=TOPSECRET,x=y:bucket/path"] {
            do {
                _ = try ObjectStoreAddress(parsing: text)
                Issue.record("\(text) was accepted")
            } catch {
                #expect(!error.description.contains("TOPSECRET"), "\(error)")
                #expect(error.description.contains(",…:bucket"), "\(error)")
            }
        }
    }
}

