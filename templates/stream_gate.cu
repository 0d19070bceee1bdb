// The stream gate (tuner/gpu/stream_gate.py; not a kernel family, not rendered): one thread that
// holds its stream until the host has written a value of at least `ticket` to `opened` (pinned
// host memory, mapped), or until `timeout_ns` have passed, so that work the host enqueues
// behind it then runs back to back however slowly the host enqueued it.

extern "C" __global__ void wait_for_host(const volatile unsigned long long* opened,
                                         unsigned long long ticket, unsigned long long timeout_ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        if (*opened >= ticket) return;
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < timeout_ns);
}
