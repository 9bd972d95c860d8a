import Testing

@testable import EventLoop

#if canImport(Glibc)
    import Glibc
#endif

@Suite("The default loop count")
struct ProcessorCountTests {
    @Test("reads a cgroup v2 CPU quota as whole CPUs, rounded up; no quota or anything unreadable is nil")
    func quota() {
        let cases: [(String, Int?)] = [
            ("max 100000\n", nil),
            ("150000 100000\n", 2),
            ("100000 100000\n", 1),
            ("50000 100000", 1),
            ("400000 100000\n", 4),
            ("", nil),
            ("100000", nil),
            ("0 100000", nil),
            ("-1 100000", nil),
            ("100000 0", nil),
            ("abc 100000", nil),
            ("100000 100000 7", nil),
        ]
        for (text, expected) in cases {
            #expect(EventLoopGroup.quotaCPUs(cpuMax: text) == expected, "\(text.debugDescription)")
        }
    }

    @Test("reads a cgroup v1 CPU quota the same way; -1 is no quota")
    func quotaV1() {
        let cases: [(String, String, Int?)] = [
            ("-1\n", "100000\n", nil),
            ("150000\n", "100000\n", 2),
            ("100000", "100000", 1),
            ("250000\n", "100000\n", 3),
            ("0\n", "100000\n", nil),
            ("100000\n", "0\n", nil),
            ("", "100000", nil),
            ("x", "100000", nil),
        ]
        for (quota, period, expected) in cases {
            #expect(
                EventLoopGroup.quotaCPUs(cfsQuota: quota, cfsPeriod: period) == expected,
                "\(quota.debugDescription) \(period.debugDescription)")
        }
    }

    @Test("finds the cpu controller's cgroup in /proc/self/cgroup")
    func v1Path() {
        #expect(EventLoopGroup.cgroupV1CPUPath(in: "4:memory:/m\n2:cpuacct:/x\n1:cpu:/a/b\n0::/\n") == "/a/b")
        #expect(
            EventLoopGroup.cgroupV1CPUPath(in: "3:cpu,cpuacct:/system.slice/x.service\n") == "/system.slice/x.service")
        #expect(EventLoopGroup.cgroupV1CPUPath(in: "1:cpu:/\n") == "")
        #expect(EventLoopGroup.cgroupV1CPUPath(in: "0::/user.slice\n") == nil, "cgroup v2 only")
        #expect(EventLoopGroup.cgroupV1CPUPath(in: "") == nil)
    }

    @Test("takes the fewest of the online CPUs, the affinity mask and the quota, ignoring unknown counts")
    func available() {
        // (online, affinity, quota, loops)
        let cases: [(Int, Int, Int?, Int)] = [
            (8, 8, nil, 8),
            (8, 2, nil, 2),
            (8, 8, 3, 3),
            (8, 2, 4, 2),
            (8, 0, nil, 8),
            (0, 0, nil, 1),
            (-1, 4, nil, 4),
            (2, 2, 64, 2),
        ]
        for (online, affinity, quota, loops) in cases {
            #expect(EventLoopGroup.availableCPUs(online: online, affinity: affinity, quota: quota) == loops)
        }
    }

    @Test("on this machine: at least one, at most the online CPUs")
    func live() {
        let count = EventLoopGroup.processorCount
        #expect(count >= 1 && count <= Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}
