/* A real NVTX v3 client for the flinch-nvtx tests, built with gcc against the NVTX headers of the
 * nvidia-nvtx wheel (scripts/setup.sh installs it). It exercises the ASCII, wide and Ex entry
 * points, domains, registered strings, start/end ranges (one ended on another thread) and
 * overlapping same-name ranges on two threads.
 *
 *   nvtx_client scenario   prints, for each range, `span <label> <lo_ns> <hi_ns>`: bounds on the
 *                          duration the marks must give (the library takes its time inside the
 *                          NVTX call, between this program's readings around the call), and
 *                          `mark <label>` for each mark.
 *   nvtx_client bench N [T] N push/pop pairs on each of T threads (default 1); prints
 *                          `ns_per_push_pop <wall> cpu_ns_per_push_pop <cpu>`: wall time over N,
 *                          and the threads' mean CPU time per pair (robust on a loaded machine).
 *   nvtx_client flood N S  N push/pop pairs spread evenly over S seconds; prints the count.
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void span(const char *label, long long before_start, long long after_start,
                 long long before_end, long long after_end) {
    printf("span %s %lld %lld\n", label, before_end - after_start, after_end - before_start);
}

static nvtxEventAttributes_t attr_ascii(const char *m) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = m;
    return a;
}

static nvtxEventAttributes_t attr_wide(const wchar_t *m) {
    nvtxEventAttributes_t a = attr_ascii(NULL);
    a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    a.message.unicode = m;
    return a;
}

static nvtxEventAttributes_t attr_registered(nvtxStringHandle_t h) {
    nvtxEventAttributes_t a = attr_ascii(NULL);
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = h;
    return a;
}

/* Two threads run `work`: A over [0, 40] ms, B over [15, 60] ms; they overlap. */
static void *worker(void *arg) {
    int b = *(int *)arg;
    if (b) sleep_ms(15);
    long long t0 = now_ns();
    nvtxRangePushA("work");
    long long t1 = now_ns();
    sleep_ms(b ? 45 : 40);
    long long t2 = now_ns();
    nvtxRangePop();
    long long t3 = now_ns();
    span("work_start", t0, t1, t2, t3);
    return NULL;
}

struct cross { nvtxRangeId_t id; long long t2, t3; };

static void *ender(void *arg) {
    struct cross *c = arg;
    sleep_ms(20);
    c->t2 = now_ns();
    nvtxRangeEnd(c->id);
    c->t3 = now_ns();
    return NULL;
}

static int scenario(void) {
    long long t0, t1, t2, t3, u0, u1, u2, u3;

    /* Nested push/pop: A outside, W inside. */
    t0 = now_ns(); nvtxRangePushA("outer"); t1 = now_ns();
    sleep_ms(20);
    u0 = now_ns(); nvtxRangePushW(L"inner"); u1 = now_ns();
    sleep_ms(10);
    u2 = now_ns(); nvtxRangePop(); u3 = now_ns();
    sleep_ms(5);
    t2 = now_ns(); nvtxRangePop(); t3 = now_ns();
    span("inner_start", u0, u1, u2, u3);
    span("outer_start", t0, t1, t2, t3);

    /* Ex pushes, ASCII and wide. */
    nvtxEventAttributes_t a = attr_ascii("ex_ascii");
    t0 = now_ns(); nvtxRangePushEx(&a); t1 = now_ns();
    sleep_ms(12);
    t2 = now_ns(); nvtxRangePop(); t3 = now_ns();
    span("ex_ascii_start", t0, t1, t2, t3);
    a = attr_wide(L"ex_wide\u00e9");
    t0 = now_ns(); nvtxRangePushEx(&a); t1 = now_ns();
    sleep_ms(8);
    t2 = now_ns(); nvtxRangePop(); t3 = now_ns();
    span("ex_wide\xc3\xa9_start", t0, t1, t2, t3);

    /* Start/end ranges: A, W, Ex, overlapping each other (not nested). */
    t0 = now_ns(); nvtxRangeId_t ra = nvtxRangeStartA("sa"); t1 = now_ns();
    sleep_ms(5);
    u0 = now_ns(); nvtxRangeId_t rw = nvtxRangeStartW(L"sw"); u1 = now_ns();
    sleep_ms(5);
    t2 = now_ns(); nvtxRangeEnd(ra); t3 = now_ns();
    span("sa_start", t0, t1, t2, t3);
    a = attr_ascii("sex");
    t0 = now_ns(); nvtxRangeId_t rx = nvtxRangeStartEx(&a); t1 = now_ns();
    sleep_ms(5);
    u2 = now_ns(); nvtxRangeEnd(rw); u3 = now_ns();
    span("sw_start", u0, u1, u2, u3);
    t2 = now_ns(); nvtxRangeEnd(rx); t3 = now_ns();
    span("sex_start", t0, t1, t2, t3);

    /* A start/end range ended on another thread. */
    struct cross c;
    pthread_t te;
    t0 = now_ns(); c.id = nvtxRangeStartA("xthread"); t1 = now_ns();
    pthread_create(&te, NULL, ender, &c);
    pthread_join(te, NULL);
    span("xthread_start", t0, t1, c.t2, c.t3);

    /* Domains (A and W), registered strings (A and W), domain marks. */
    nvtxDomainHandle_t d = nvtxDomainCreateA("dom");
    nvtxDomainHandle_t dw = nvtxDomainCreateW(L"wdom");
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(d, "reg");
    nvtxStringHandle_t regw = nvtxDomainRegisterStringW(d, L"regw");
    a = attr_registered(reg);
    t0 = now_ns(); nvtxDomainRangePushEx(d, &a); t1 = now_ns();
    /* The default domain's stack is separate: this push/pop does not end dom:reg. */
    nvtxRangePushA("default_in_dom");
    sleep_ms(7);
    nvtxRangePop();
    t2 = now_ns(); nvtxDomainRangePop(d); t3 = now_ns();
    span("dom:reg_start", t0, t1, t2, t3);
    a = attr_ascii("dse");
    t0 = now_ns(); nvtxRangeId_t rd = nvtxDomainRangeStartEx(dw, &a); t1 = now_ns();
    sleep_ms(6);
    t2 = now_ns(); nvtxDomainRangeEnd(dw, rd); t3 = now_ns();
    span("wdom:dse_start", t0, t1, t2, t3);
    a = attr_ascii("dm");
    nvtxDomainMarkEx(d, &a);
    printf("mark dom:dm\n");
    a = attr_registered(regw);
    nvtxDomainMarkEx(d, &a);
    printf("mark dom:regw\n");
    nvtxDomainNameCategoryA(d, 1, "cat");
    nvtxNameCategoryA(2, "cat2");
    nvtxNameOsThreadA(0, "main");

    /* Marks: A, W, Ex, and a label with control characters. */
    nvtxMarkA("m_a");
    printf("mark m_a\n");
    nvtxMarkW(L"m_w");
    printf("mark m_w\n");
    a = attr_ascii("m_ex");
    nvtxMarkEx(&a);
    printf("mark m_ex\n");
    nvtxMarkA("bad\nlabel\tx");
    printf("mark bad label x\n");

    /* Overlapping same-name ranges on two threads. */
    pthread_t ta, tb;
    int za = 0, zb = 1;
    pthread_create(&ta, NULL, worker, &za);
    pthread_create(&tb, NULL, worker, &zb);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    return 0;
}

static long bench_n;

static long long cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Returns (through arg) the thread's CPU time for its pairs. */
static void *bench_thread(void *arg) {
    long long c0 = cpu_ns();
    for (long i = 0; i < bench_n; i++) {
        nvtxRangePushA("bench_range");
        nvtxRangePop();
    }
    *(long long *)arg = cpu_ns() - c0;
    return NULL;
}

static int bench(long n, int threads) {
    /* Warm up: the first NVTX call loads the injection library. */
    nvtxRangePushA("warm");
    nvtxRangePop();
    pthread_t ts[64];
    long long cpu[64];
    if (threads < 1 || threads > 64) return 2;
    bench_n = n;
    long long t0 = now_ns();
    for (int i = 0; i < threads; i++) pthread_create(&ts[i], NULL, bench_thread, &cpu[i]);
    for (int i = 0; i < threads; i++) pthread_join(ts[i], NULL);
    long long t1 = now_ns();
    long long cpu_sum = 0;
    for (int i = 0; i < threads; i++) cpu_sum += cpu[i];
    printf("ns_per_push_pop %.1f cpu_ns_per_push_pop %.1f\n", (double)(t1 - t0) / (double)n,
           (double)cpu_sum / (double)n / (double)threads);
    return 0;
}

static int flood(long n, double seconds) {
    long long t0 = now_ns();
    long long step = (long long)(seconds * 1e9 / (double)n);
    for (long i = 0; i < n; i++) {
        while (now_ns() < t0 + step * i) {
        }
        nvtxRangePushA("flood");
        nvtxRangePop();
    }
    printf("flood %ld ranges in %.3f s\n", n, (double)(now_ns() - t0) / 1e9);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "scenario") == 0) return scenario();
    if (argc >= 3 && strcmp(argv[1], "bench") == 0)
        return bench(atol(argv[2]), argc >= 4 ? atoi(argv[3]) : 1);
    if (argc >= 4 && strcmp(argv[1], "flood") == 0) return flood(atol(argv[2]), atof(argv[3]));
    fprintf(stderr, "usage: nvtx_client scenario | bench N [THREADS] | flood N SECONDS\n");
    return 2;
}
