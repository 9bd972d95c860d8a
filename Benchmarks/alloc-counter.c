// Heap allocations counted, for Benchmarks/allocations.sh: an LD_PRELOAD library that wraps
// malloc, calloc, realloc, reallocarray, free, posix_memalign, aligned_alloc, memalign, valloc
// and pvalloc, passes each call on to the C library's own (dlsym(RTLD_NEXT, …)), and counts it
// with relaxed atomics into counters in a file mapped MAP_SHARED, which another process reads
// at any time (as little-endian 64-bit integers):
//   offset  0  allocations  every call that returned a new block: malloc, calloc, the aligned
//                           ones, realloc(NULL, n), and every realloc(p, n) that returned a
//                           block (p != NULL, n > 0), moved or not, counted as one allocation
//                           and one free, as SwiftNIO's allocation counter does
//   offset  8  frees        free(p) of a block (free(NULL) is not counted), realloc(p, 0), and
//                           the old block of a realloc(p, n) as above
//   offset 16  bytes        the bytes those allocations asked for (calloc: n × size)
//   offset 24  reallocs     the realloc(p, n) calls among the allocations (p != NULL, n > 0)
// The file is ALLOC_COUNTER_FILE, which the library opens in its constructor, creating it and
// growing it to COUNTER_FILE_SIZE bytes when it is smaller (a file that is large enough keeps
// its counts: a process started again adds to them). Without ALLOC_COUNTER_FILE, or when the
// file cannot be mapped, the counts stay in this process's memory and nobody reads them.
//
// Allocations made before the constructor runs (by the dynamic loader or other libraries'
// constructors) are counted in process memory and added to the file's counters when it is
// mapped. The wrappers allocate nothing and take no lock. dlsym may itself call calloc or
// malloc before the real ones are known: those few early calls are served from a static
// buffer, and free or realloc of such a block never reaches the C library.
//
// cc -O2 -shared -fPIC -o alloc-counter.so Benchmarks/alloc-counter.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define COUNTER_FILE_SIZE 4096

struct counters {
    uint64_t allocations;
    uint64_t frees;
    uint64_t bytes;
    uint64_t reallocs;
};

static struct counters early;  // before the file is mapped
static struct counters *volatile shared = &early;

static inline void add(uint64_t *counter, uint64_t amount) {
    __atomic_fetch_add(counter, amount, __ATOMIC_RELAXED);
}
static inline void count_allocation(size_t size) {
    struct counters *c = shared;
    add(&c->allocations, 1);
    add(&c->bytes, size);
}
static inline void count_free(void) { add(&shared->frees, 1); }

// The C library's functions, found on first use.
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);

// The bootstrap buffer: blocks for dlsym's own allocations while the real functions are being
// looked up. Each block is preceded by its size (for realloc of one); blocks are never reused.
#define BOOTSTRAP_SIZE 65536
static _Alignas(16) unsigned char bootstrap[BOOTSTRAP_SIZE];
static size_t bootstrap_used;  // guarded by resolving: only the resolving thread takes blocks
static int resolving;

static int from_bootstrap(const void *p) {
    return (const unsigned char *)p >= bootstrap && (const unsigned char *)p < bootstrap + BOOTSTRAP_SIZE;
}
static void *bootstrap_alloc(size_t size) {
    size_t need = 16 + ((size + 15) & ~(size_t)15);
    if (size > BOOTSTRAP_SIZE || bootstrap_used + need > BOOTSTRAP_SIZE) return NULL;
    unsigned char *block = bootstrap + bootstrap_used;
    bootstrap_used += need;
    memcpy(block, &size, sizeof size);
    return block + 16;  // zeroed: the buffer is static and never reused
}
static size_t bootstrap_block_size(const void *p) {
    size_t size;
    memcpy(&size, (const unsigned char *)p - 16, sizeof size);
    return size;
}

static void resolve(void) {
    if (__atomic_load_n(&real_free, __ATOMIC_ACQUIRE)) return;
    resolving = 1;
    real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    real_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    real_valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
    real_pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
    void (*found_free)(void *) = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    resolving = 0;
    if (!real_malloc || !real_calloc || !real_realloc || !found_free) abort();
    __atomic_store_n(&real_free, found_free, __ATOMIC_RELEASE);
}

void *malloc(size_t size) {
    if (!real_malloc) {
        if (resolving) return bootstrap_alloc(size);
        resolve();
    }
    void *p = real_malloc(size);
    if (p) count_allocation(size);
    return p;
}

void *calloc(size_t count, size_t size) {
    if (!real_calloc) {
        if (resolving) {
            size_t total;
            if (__builtin_mul_overflow(count, size, &total)) return NULL;
            return bootstrap_alloc(total);
        }
        resolve();
    }
    void *p = real_calloc(count, size);
    if (p) count_allocation(count * size);
    return p;
}

void free(void *p) {
    if (!p || from_bootstrap(p)) return;
    if (!real_free) resolve();
    count_free();
    real_free(p);
}

void *realloc(void *p, size_t size) {
    if (!real_realloc) {
        if (resolving) {
            void *q = bootstrap_alloc(size);
            if (q && p) memcpy(q, p, bootstrap_block_size(p) < size ? bootstrap_block_size(p) : size);
            return q;
        }
        resolve();
    }
    if (p && from_bootstrap(p)) {  // a block dlsym took: copied into a real one
        void *q = malloc(size ? size : 1);
        if (q) memcpy(q, p, bootstrap_block_size(p) < size ? bootstrap_block_size(p) : size);
        return q;
    }
    if (!p) return malloc(size);
    if (size == 0) {  // glibc frees p and returns NULL
        count_free();
        return real_realloc(p, 0);
    }
    void *q = real_realloc(p, size);
    if (q) {
        struct counters *c = shared;
        add(&c->allocations, 1);
        add(&c->bytes, size);
        add(&c->frees, 1);
        add(&c->reallocs, 1);
    }
    return q;
}

// glibc's reallocarray calls realloc inside the library, past this one: done here instead.
void *reallocarray(void *p, size_t count, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, total);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    if (!real_posix_memalign) resolve();
    int result = real_posix_memalign(out, alignment, size);
    if (result == 0) count_allocation(size);
    return result;
}

void *aligned_alloc(size_t alignment, size_t size) {
    if (!real_aligned_alloc) resolve();
    void *p = real_aligned_alloc(alignment, size);
    if (p) count_allocation(size);
    return p;
}

void *memalign(size_t alignment, size_t size) {
    if (!real_memalign) resolve();
    void *p = real_memalign(alignment, size);
    if (p) count_allocation(size);
    return p;
}

void *valloc(size_t size) {
    if (!real_valloc) resolve();
    void *p = real_valloc(size);
    if (p) count_allocation(size);
    return p;
}

void *pvalloc(size_t size) {
    if (!real_pvalloc) resolve();
    void *p = real_pvalloc(size);
    if (p) count_allocation(size);
    return p;
}

// Maps ALLOC_COUNTER_FILE and moves the early counts into it. Runs before main, on one thread;
// open, fstat, ftruncate, mmap and close allocate nothing.
__attribute__((constructor(101))) static void map_counters(void) {
    resolve();
    const char *path = getenv("ALLOC_COUNTER_FILE");
    if (!path || !*path) return;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    struct stat status;
    if (fstat(fd, &status) != 0 || (status.st_size < COUNTER_FILE_SIZE && ftruncate(fd, COUNTER_FILE_SIZE) != 0)) {
        close(fd);
        return;
    }
    void *map = mmap(NULL, COUNTER_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return;
    struct counters *file = map;
    // Swapped in before the early counts are read, so none made meanwhile is lost.
    shared = file;
    add(&file->allocations, __atomic_load_n(&early.allocations, __ATOMIC_RELAXED));
    add(&file->frees, __atomic_load_n(&early.frees, __ATOMIC_RELAXED));
    add(&file->bytes, __atomic_load_n(&early.bytes, __ATOMIC_RELAXED));
    add(&file->reallocs, __atomic_load_n(&early.reallocs, __ATOMIC_RELAXED));
}
