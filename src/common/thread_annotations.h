// Clang thread-safety annotations; empty on g++ (which has no such analysis).
// Debug builds of g++ back them with the rank checks in mutex.h.
#pragma once

#if defined(__clang__)
#define TROVE_TSA(x) __attribute__((x))
#else
#define TROVE_TSA(x)
#endif

#define CAPABILITY(x) TROVE_TSA(capability(x))
#define SCOPED_CAPABILITY TROVE_TSA(scoped_lockable)
#define GUARDED_BY(x) TROVE_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) TROVE_TSA(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) TROVE_TSA(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) TROVE_TSA(acquired_after(__VA_ARGS__))
#define REQUIRES(...) TROVE_TSA(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) TROVE_TSA(acquire_capability(__VA_ARGS__))
#define RELEASE(...) TROVE_TSA(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) TROVE_TSA(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) TROVE_TSA(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) TROVE_TSA(assert_capability(x))
#define NO_THREAD_SAFETY_ANALYSIS TROVE_TSA(no_thread_safety_analysis)
