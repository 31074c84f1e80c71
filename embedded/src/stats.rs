//! Measurements for `--stats`: SysTick ticks of the analysis (under QEMU's `-icount`, virtual
//! time follows executed instructions) and the stack's high-water mark (cortex-m-rt paints the
//! stack with 0xCCCC_CCCC at reset: the lowest word no longer painted is the deepest reached).
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::{SYST, syst::SystClkSource};
use cortex_m_rt::exception;

const RELOAD: u32 = 0x00FF_FFFF;

static WRAPS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    WRAPS.fetch_add(1, Ordering::Relaxed);
}

/// SysTick counting down from 2^24 - 1 at the core clock, its wraps counted.
pub struct Clock {
    syst: Option<SYST>,
    start: u64,
}

impl Clock {
    /// Starts the count (once; later calls count nothing).
    pub fn start() -> Clock {
        let Some(p) = cortex_m::Peripherals::take() else {
            return Clock {
                syst: None,
                start: 0,
            };
        };
        let mut syst = p.SYST;
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(RELOAD);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
        // The current value reads 0 until the first reload.
        while SYST::get_current() == 0 {}
        let mut c = Clock {
            syst: Some(syst),
            start: 0,
        };
        c.start = c.now();
        c
    }

    fn now(&mut self) -> u64 {
        if self.syst.is_none() {
            return 0;
        }
        loop {
            let w = WRAPS.load(Ordering::Relaxed);
            let cur = SYST::get_current();
            if WRAPS.load(Ordering::Relaxed) == w {
                return w as u64 * (RELOAD as u64 + 1) + (RELOAD - cur) as u64;
            }
        }
    }

    /// Ticks since `start`.
    pub fn ticks(&mut self) -> u64 {
        self.now() - self.start
    }
}

unsafe extern "C" {
    static _stack_start: u32;
    static _stack_end: u32;
    static __sdata: u32;
    static __euninit: u32;
}

/// Bytes of statics (.data, .bss, .uninit).
pub fn static_bytes() -> usize {
    // Only the symbols' addresses are taken.
    core::ptr::addr_of!(__euninit) as usize - core::ptr::addr_of!(__sdata) as usize
}

/// The deepest the stack has reached so far, in bytes below its top.
pub fn stack_peak_bytes() -> usize {
    // SAFETY: the words between `_stack_end` and `_stack_start` are RAM the program owns; they
    // are read (volatile, aligned), never written.
    unsafe {
        let top = core::ptr::addr_of!(_stack_start) as usize;
        let mut p = core::ptr::addr_of!(_stack_end) as usize;
        while p < top && core::ptr::read_volatile(p as *const u32) == 0xCCCC_CCCC {
            p += 4;
        }
        top - p
    }
}
