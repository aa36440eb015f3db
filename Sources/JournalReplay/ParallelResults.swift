/// One result slot per parallel task: each task writes only its own index, so no lock.
final class ParallelResults<T>: @unchecked Sendable {
    private let slots: UnsafeMutablePointer<T?>
    private let count: Int

    init(count: Int) {
        self.count = count
        slots = .allocate(capacity: max(count, 1))
        slots.initialize(repeating: nil, count: max(count, 1))
    }

    deinit {
        slots.deinitialize(count: max(count, 1))
        slots.deallocate()
    }

    func set(_ index: Int, _ value: T?) { slots[index] = value }
    func peek(_ index: Int) -> T? { slots[index] }
    func take(_ index: Int) -> T? {
        let value = slots[index]
        slots[index] = nil
        return value
    }
}
