//! The parts a step's time splits into, and which events are of which class (docs/steps.md).

/// A part of a step's wall time, in priority order: at each instant the lowest-numbered
/// class active there takes the instant; `Other` is the time no class covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    /// A GPU `kernel` that is not NCCL/RCCL communication.
    Kernel = 0,
    /// `gpu_memcpy`.
    Memcpy = 1,
    /// `gpu_memset`.
    Memset = 2,
    /// A `kernel` named `ncclKernel_*` or `ncclDevKernel_*`.
    Communication = 3,
    /// `cuda_runtime` or `cuda_driver`.
    Runtime = 4,
    /// A `cpu_op` or `user_annotation` named `enumerate(DataLoader)*` (PyTorch's profiler
    /// writes the data loader's `__next__` as a `user_annotation`).
    Dataloader = 5,
    /// Any other `cpu_op`.
    CpuExec = 6,
    /// None of the above.
    Other = 7,
}

/// The classes events can be of (every part but `Other`).
pub const CLASSES: usize = 7;
/// Every part.
pub const PARTS: usize = 8;

/// Every part, in priority order.
pub const ALL: [Part; PARTS] = [
    Part::Kernel,
    Part::Memcpy,
    Part::Memset,
    Part::Communication,
    Part::Runtime,
    Part::Dataloader,
    Part::CpuExec,
    Part::Other,
];

impl Part {
    /// The part's key in the JSON.
    pub const fn key(self) -> &'static str {
        match self {
            Part::Kernel => "kernel",
            Part::Memcpy => "memcpy",
            Part::Memset => "memset",
            Part::Communication => "communication",
            Part::Runtime => "runtime",
            Part::Dataloader => "dataloader",
            Part::CpuExec => "cpu_exec",
            Part::Other => "other",
        }
    }

    /// A host op's class (whose names the outliers list).
    pub const fn is_cpu_op(self) -> bool {
        matches!(self, Part::Dataloader | Part::CpuExec)
    }
}

/// The name prefix of the data loader's iteration, as PyTorch's profiler records it.
const DATALOADER: &[u8] = b"enumerate(DataLoader)";

/// The class of a complete event of category `cat` named `name`, if any.
pub fn class_of(cat: &[u8], name: &[u8]) -> Option<Part> {
    Some(match cat {
        b"kernel" => {
            if name.starts_with(b"ncclKernel_") || name.starts_with(b"ncclDevKernel_") {
                Part::Communication
            } else {
                Part::Kernel
            }
        }
        b"gpu_memcpy" => Part::Memcpy,
        b"gpu_memset" => Part::Memset,
        b"cuda_runtime" | b"cuda_driver" => Part::Runtime,
        b"cpu_op" => {
            if name.starts_with(DATALOADER) {
                Part::Dataloader
            } else {
                Part::CpuExec
            }
        }
        b"user_annotation" if name.starts_with(DATALOADER) => Part::Dataloader,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_as_the_rule_says() {
        assert_eq!(class_of(b"kernel", b"sgemm"), Some(Part::Kernel));
        assert_eq!(
            class_of(b"kernel", b"ncclKernel_AllReduce_RING_LL_Sum_float"),
            Some(Part::Communication)
        );
        assert_eq!(
            class_of(b"kernel", b"ncclDevKernel_AllGather_RING_LL"),
            Some(Part::Communication)
        );
        assert_eq!(class_of(b"kernel", b"xncclKernel_"), Some(Part::Kernel));
        assert_eq!(class_of(b"gpu_memcpy", b"Memcpy HtoD"), Some(Part::Memcpy));
        assert_eq!(class_of(b"gpu_memset", b"Memset"), Some(Part::Memset));
        assert_eq!(
            class_of(b"cuda_runtime", b"cudaLaunchKernel"),
            Some(Part::Runtime)
        );
        assert_eq!(
            class_of(b"cuda_driver", b"cuLaunchKernel"),
            Some(Part::Runtime)
        );
        assert_eq!(
            class_of(
                b"cpu_op",
                b"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
            ),
            Some(Part::Dataloader)
        );
        // torch 2.15 records the data loader's `__next__` as a user annotation.
        assert_eq!(
            class_of(
                b"user_annotation",
                b"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
            ),
            Some(Part::Dataloader)
        );
        assert_eq!(
            class_of(b"user_annotation", b"Optimizer.step#SGD.step"),
            None
        );
        assert_eq!(class_of(b"cpu_op", b"aten::mm"), Some(Part::CpuExec));
        for cat in [
            &b"user_annotation"[..],
            b"gpu_user_annotation",
            b"python_function",
            b"ac2g",
            b"Kernel",
            b"",
        ] {
            assert_eq!(class_of(cat, b"x"), None);
        }
        for (i, p) in ALL.iter().enumerate() {
            assert_eq!(*p as usize, i);
        }
    }
}
