#if canImport(Glibc)
import Glibc
#endif

/// glibc's allocator gives each thread that meets contention an arena of its
/// own, up to eight per core, and memory freed into one arena is not reused
/// by another: a night's pages, decoded on the cooperative pool's threads and
/// freed by the writer's, left each arena holding its own high-water mark.
/// Two arenas, as MALLOC_ARENA_MAX=2 asks (the setting servers commonly run
/// glibc with), measured on a 1M-record first load: peak RSS 218-242 MB in 4
/// runs against 233-284 MB in 7 with the default, in the same time (34-42 s
/// against 36-39 s). A MALLOC_ARENA_MAX the user set is left to glibc.
enum MallocArenas {
    /// `M_ARENA_MAX` of glibc's malloc.h, which the Glibc module does not import.
    private static let arenaMaxParameter: Int32 = -8

    static func limit(to count: Int32 = 2) {
        #if canImport(Glibc)
        guard getenv("MALLOC_ARENA_MAX") == nil,
              // Looked up, not linked: malloc.h is not in the Glibc module, and a C
              // target for one call would be more than the call.
              let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        _ = unsafeBitCast(symbol, to: Mallopt.self)(arenaMaxParameter, count)
        #endif
    }
}
