internal import CTestSupport

/// Makes file modes bind the calling thread even when the tests run as root, whose
/// CAP_DAC_OVERRIDE writes through any mode: that thread (only) loses the capabilities that
/// override them. For a pool thread of a test's own, so what the pool does next on it meets the
/// modes a deployment's unprivileged user meets. Needs no privilege: a thread may always drop
/// its own capabilities. Throws the errno when the kernel refuses.
package func dropFileOverridesOnThisThread() throws {
    let status = tg_test_drop_file_overrides_on_this_thread()
    guard status == 0 else { throw FileOverridesError(errno: status) }
}

package struct FileOverridesError: Error, CustomStringConvertible {
    package let errno: Int32
    package var description: String { "capset on this thread failed: errno \(errno)" }
}
