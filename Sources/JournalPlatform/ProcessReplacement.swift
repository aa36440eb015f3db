#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ProcessInfoLite {
    /// The running program's file, symbolic links resolved: `/proc/self/exe` on Linux,
    /// `_NSGetExecutablePath` on macOS. Nil where the system does not say.
    public static var executablePath: String? {
        #if canImport(Darwin)
        var size: UInt32 = 0
        _ = _NSGetExecutablePath(nil, &size)
        var buffer = [CChar](repeating: 0, count: Int(size) + 1)
        guard _NSGetExecutablePath(&buffer, &size) == 0, let resolved = realpath(buffer, nil) else { return nil }
        #else
        guard let resolved = realpath("/proc/self/exe", nil) else { return nil }
        #endif
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Replaces this process with `program` (`execv`): same pid, descriptors, environment and
    /// signal targets, so a shell, a service manager or Ctrl-C reach the program itself.
    /// Returns only when the program could not be started, with why.
    public static func replaceProcess(with program: String, arguments: [String]) -> IOError {
        var pointers: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        execv(program, pointers)
        return IOError("exec", path: program, code: errno)
    }
}
