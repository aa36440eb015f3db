#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Atomics
import SystemPackage

/// A seam for tests: every storage write, fsync, truncate, rename, link, remove, mkdir and
/// directory fsync asks `hook` first, which may fail it with an errno (after SQLite's
/// `ioerr` loop and LevelDB's fault-injection env).
///
/// The hook is consulted only in builds with the `FaultInjection` trait (Package.swift; the
/// README's test command, `swift test --traits FaultInjection`): every other build, debug ones
/// included, carries no thread-specific slot and no check, and a hook set there is never asked
/// (tests that need one are skipped, `isCompiled`). It is task-local and package-only: a test
/// sets it with `FaultInjection.$hook.withValue(hook) { ... }`, so it fails operations of that
/// test's task only (tests run in parallel), and no application linking the library can set it.
///
/// Both builds declare the same package interface, so that the tests compile without the
/// trait too (and report the fault tests skipped).
package enum FaultInjection {
    package enum Operation: String, Sendable, CaseIterable {
        case open, write, fsync, truncate, rename, link, remove, mkdir, syncDirectory
    }

    /// Returns an errno (e.g. `EIO`, `ENOSPC`) to fail the operation, nil to let it run.
    package typealias Hook = @Sendable (Operation, String) -> Int32?

    @TaskLocal package static var hook: Hook? = nil

    #if JOURNAL_FAULT_INJECTION
    /// Whether this build asks the hook at all.
    package static let isCompiled = true

    /// Runs `body` with `hook` in force on this thread: how work a test's task hands to a
    /// thread of the library keeps the test's hook. Bound in two places only, where work
    /// changes threads: `WorkerThread.submit` and the writer's `DurableJob`.
    /// A task-local cannot be bound there (the runtime has no task to bind it to), and running
    /// the work as a task instead could starve the cooperative pool the test itself blocks.
    package static func withThreadHook<T>(_ hook: Hook?, _ body: () throws -> T) rethrows -> T {
        guard let hook else { return try body() }
        let box = Unmanaged.passRetained(HookBox(hook))
        let previous = pthread_getspecific(threadHookKey)
        pthread_setspecific(threadHookKey, box.toOpaque())
        defer {
            pthread_setspecific(threadHookKey, previous)
            box.release()
        }
        return try body()
    }

    /// The hook in force: the task's, else the one `withThreadHook` set on this thread.
    package static var current: Hook? {
        if let hook { return hook }
        guard let raw = pthread_getspecific(threadHookKey) else { return nil }
        return Unmanaged<HookBox>.fromOpaque(raw).takeUnretainedValue().hook
    }

    private final class HookBox {
        let hook: Hook
        init(_ hook: @escaping Hook) { self.hook = hook }
    }

    private static let threadHookKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    @inline(__always)
    static func fault(_ operation: Operation, _ path: String) -> Int32? {
        guard let hook = current else { return nil }
        return hook(operation, path)
    }
    #else
    package static let isCompiled = false
    package static func withThreadHook<T>(_ hook: Hook?, _ body: () throws -> T) rethrows -> T { try body() }
    package static var current: Hook? { nil }
    @inline(__always) static func fault(_ operation: Operation, _ path: String) -> Int32? { nil }
    #endif

    @inline(__always)
    static func check(_ operation: Operation, _ path: String) throws(IOError) {
        if let code = fault(operation, path) { throw IOError(operation.rawValue, path: path, code: code) }
    }
}
