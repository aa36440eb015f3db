#if canImport(Glibc)
import CMalloc
#endif

/// How the C allocator hands freed memory back to the system, for a process that runs for days.
public enum Allocator {
    /// After the first large buffer it frees, glibc raises its mmap and trim thresholds for
    /// the whole process (to about twice that buffer: a decoded block of 32,768 events is
    /// 3.9 MB). From then on every buffer below the new threshold comes from a thread's arena,
    /// and a free arena top under ~8 MB is never returned: a relay that opened one big board
    /// and served one late joiner kept ~20 MB it no longer used. Fixed thresholds turn that
    /// adjustment off (mallopt(3)): a free arena top over 128 KiB goes back to the system, and
    /// buffers over 1 MiB are mapped and unmapped on their own. The mmap threshold is not left
    /// at glibc's 128 KiB: mapping every buffer over it cost about a third of the relay's
    /// whole-stroke ingest. On the 2 M-point board: +22 MB resident after its open and two
    /// catch-ups before, about +8 MB with these (docs/history/PERFORMANCE-RUNS.md, "Relay
    /// memory per open board"). No-op off glibc.
    public static func returnFreedMemoryPromptly() {
        #if canImport(Glibc)
        _ = mallopt(M_TRIM_THRESHOLD, trimThreshold)
        _ = mallopt(M_MMAP_THRESHOLD, mmapThreshold)
        #endif
    }

    static let trimThreshold: Int32 = 128 << 10
    static let mmapThreshold: Int32 = 1 << 20
}
