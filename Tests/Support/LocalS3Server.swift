import Foundation

/// A real S3 server on 127.0.0.1: a one-node Ceph cluster and its RADOS Gateway, started by
/// `Tools/ci/s3/ceph-rgw.sh` from Debian's packages and stopped afterwards.
public final class LocalS3Server: @unchecked Sendable {
    public let directory: String
    public let endpoint: String
    public let accessKey: String
    public let secretKey: String

    public static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tools/ci/s3/ceph-rgw.sh").path

    /// The programs the script and the sync need, found on PATH.
    public static var toolsInstalled: Bool {
        ["rclone", "ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "jq", "curl"].allSatisfy { tool in
            (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").contains {
                FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)")
            }
        }
    }

    public init(in temp: TemporaryDirectory) throws {
        directory = temp.path + "/ceph"
        let run = try runTool("/bin/bash", [Self.script, "start", directory])
        guard run.status == 0 else { throw RunFailure("ceph-rgw.sh start failed (\(run.status)): \(run.stderr.suffix(2000))") }
        let text = try String(contentsOfFile: directory + "/env", encoding: .utf8)
        func value(_ name: String) -> String {
            text.split(separator: "\n").first { $0.hasPrefix("export \(name)=") }.map { String($0.dropFirst("export \(name)=".count)) } ?? ""
        }
        endpoint = value("S3_ENDPOINT")
        accessKey = value("S3_ACCESS_KEY")
        secretKey = value("S3_SECRET_KEY")
    }

    public func stop() { _ = try? runTool("/bin/bash", [Self.script, "stop", directory]) }

    /// The environment an AWS tool reads its keys and endpoint from.
    public var awsEnvironment: [String: String] {
        ["AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey, "AWS_ENDPOINT_URL": endpoint]
    }

    /// Runs rclone itself against the server (to plant objects a journal never would).
    public func rclone(_ arguments: [String], stdin: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "AWS_CA_BUNDLE")
        environment["RCLONE_S3_ENDPOINT"] = endpoint
        environment["RCLONE_S3_PROVIDER"] = "Ceph"
        environment["RCLONE_S3_ACCESS_KEY_ID"] = accessKey
        environment["RCLONE_S3_SECRET_ACCESS_KEY"] = secretKey
        return try runTool("/usr/bin/env", ["rclone"] + arguments, environment: environment, stdin: stdin)
    }
}

public struct RunFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Runs a program, its output in files (a full pipe would block it).
public func runTool(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
             stdin: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let scratch = TemporaryDirectory("tool-io")
    defer { scratch.remove() }
    _ = FileManager.default.createFile(atPath: scratch.path + "/out", contents: nil)
    _ = FileManager.default.createFile(atPath: scratch.path + "/err", contents: nil)
    let out = FileHandle(forWritingAtPath: scratch.path + "/out")!
    let err = FileHandle(forWritingAtPath: scratch.path + "/err")!
    let input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    try process.waitForExit()
    try out.close()
    try err.close()
    return (process.terminationStatus,
            String(decoding: FileManager.default.contents(atPath: scratch.path + "/out") ?? Data(), as: UTF8.self),
            String(decoding: FileManager.default.contents(atPath: scratch.path + "/err") ?? Data(), as: UTF8.self))
}
