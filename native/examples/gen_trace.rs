//! Deterministically writes a Kineto-like (PyTorch profiler) trace and its `.gz`, for the trace
//! benchmark (`scripts/bench/trace.sh`).
//!
//! Usage: `cargo run --release -p flinch-trace --example gen_trace -- OUT_DIR [MEGABYTES] [SHAPE]`
//!
//! Writes `OUT_DIR/trace.json` (about MEGABYTES x 10^6 bytes, default 1000) and
//! `OUT_DIR/trace.json.gz` (one gzip member). The same arguments always give the same bytes.
//! SHAPE is `plain` (the default) or `with_stack`: a trace profiled with `with_stack=True`,
//! where each cpu_op sits under a chain of `python_function` frames named `file.py(line): func`
//! (thousands of distinct ops, most of them rare) and each step is an `X` `user_annotation`
//! named `ProfilerStep#N` (one distinct op per step), as Kineto writes them.
//! Either shape with `+pauses` (`plain+pauses`, `with_stack+pauses`) also holds [`PAUSES`] GPU
//! pauses of 100-800 ms spread evenly over the file, as data loading makes them in a real
//! training run (and the host waits for the GPU at the end of every step, as `loss.item()`
//! makes it, so that host and GPU time stay together): the host spends the pause in an `X` `user_annotation`
//! `enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__` with a few `cpu_op`s (collate,
//! pin memory) under it, and the GPU has nothing to run. Without `+pauses` the bytes are the
//! ones the shape always had.
//!
//! The layout follows a real Kineto trace: metadata keys and `deviceProperties` first, a ~4 MiB
//! log array before `traceEvents` (kept under the reference tool's 8 MiB header limit), then the
//! events in Kineto's own formatting (one key group per line, `args` objects, epoch microsecond
//! timestamps with three fraction digits), then a 32 MiB `systemTraceEvents` string and the
//! trailing keys. The event mix per training step: nested `cpu_op` X events, `cuda_runtime`
//! launches with `ac2g` flow events (`s`/`f`), `kernel`, `gpu_memcpy` and `gpu_memset` X events,
//! `user_annotation` B/E pairs, and a few names with JSON escapes and non-ASCII text.
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// SplitMix64: small, fast, deterministic.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

const CPU_OPS: &[&str] = &[
    "aten::linear",
    "aten::matmul",
    "aten::addmm",
    "aten::relu",
    "aten::layer_norm",
    "aten::native_layer_norm",
    "aten::softmax",
    "aten::_softmax",
    "aten::add",
    "aten::mul",
    "aten::div",
    "aten::copy_",
    "aten::to",
    "aten::_to_copy",
    "aten::empty",
    "aten::view",
    "aten::transpose",
    "aten::cat",
    "autograd::engine::evaluate_function: AddmmBackward0",
    "autograd::engine::evaluate_function: NativeLayerNormBackward0",
    "AddmmBackward0",
    "NativeLayerNormBackward0",
    "Optimizer.step#AdamW.step",
    "aten::_foreach_add_",
    "nccl:all_reduce",
    "my_module.forward \\\"quoted\\\" caf\\u00e9",
    "caf\u{e9} \u{1F680} op",
];

const KERNELS: &[&str] = &[
    "ampere_sgemm_128x64_tn",
    "ampere_sgemm_64x64_nn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
];

/// Python source files of the `with_stack` shape's frames.
const PY_FILES: &[&str] = &[
    "torch/nn/modules/module.py",
    "torch/nn/modules/linear.py",
    "torch/nn/modules/normalization.py",
    "torch/nn/modules/activation.py",
    "torch/nn/modules/container.py",
    "torch/nn/modules/sparse.py",
    "torch/nn/modules/dropout.py",
    "torch/nn/functional.py",
    "torch/_tensor.py",
    "torch/autograd/__init__.py",
    "torch/autograd/graph.py",
    "torch/optim/optimizer.py",
    "torch/optim/adamw.py",
    "torch/utils/data/dataloader.py",
    "torch/utils/data/_utils/fetch.py",
    "torch/utils/data/_utils/collate.py",
    "torch/distributed/distributed_c10d.py",
    "torch/nn/parallel/distributed.py",
    "torch/amp/autocast_mode.py",
    "torch/profiler/profiler.py",
    "transformers/models/llama/modeling_llama.py",
    "transformers/models/gpt2/modeling_gpt2.py",
    "transformers/activations.py",
    "transformers/modeling_utils.py",
    "transformers/trainer.py",
    "accelerate/accelerator.py",
    "model/attention.py",
    "model/blocks.py",
    "model/embeddings.py",
    "train.py",
];

/// Function names of the `with_stack` shape's frames.
const PY_FUNCS: &[&str] = &[
    "_call_impl",
    "_wrapped_call_impl",
    "forward",
    "backward",
    "step",
    "zero_grad",
    "__next__",
    "_next_data",
    "fetch",
    "default_collate",
    "<listcomp>",
    "<genexpr>",
    "_apply",
    "linear",
    "layer_norm",
    "dropout",
    "softmax",
    "gelu",
    "silu",
    "apply_rotary_pos_emb",
    "rotate_half",
    "repeat_kv",
    "scaled_dot_product_attention",
    "_use_grad",
    "_single_tensor_adamw",
    "_multi_tensor_adamw",
    "all_reduce",
    "_run_ddp_forward",
    "_pre_forward",
    "__enter__",
    "__exit__",
    "wrapper",
    "decorate_context",
    "_get_item",
    "training_step",
    "compute_loss",
    "train_step",
    "main",
];

/// Distinct frames of the `with_stack` shape: every (file, function) pair at several lines.
const PY_LINES_PER_FUNC: usize = 8;

/// The name of frame `k` of the pool: `file.py(line): func`.
fn py_frame(k: usize) -> String {
    let per_file = PY_FUNCS.len() * PY_LINES_PER_FUNC;
    let file = PY_FILES[k / per_file % PY_FILES.len()];
    let func = PY_FUNCS[k / PY_LINES_PER_FUNC % PY_FUNCS.len()];
    let line = 17 + (k as u64).wrapping_mul(0x9E37_79B9) % 2900;
    format!("{file}({line}): {func}")
}

/// Frames at the top of every stack (few distinct ops, most of the time).
const PY_TOP: &[&str] = &[
    "train.py(212): <module>",
    "train.py(187): main",
    "train.py(143): train_step",
    "torch/nn/modules/module.py(1527): _call_impl",
    "torch/nn/modules/module.py(1518): _wrapped_call_impl",
    "<built-in method run_backward of torch._C._EngineBase object at 0x7f3a2c1e4b80>",
];

/// GPU pauses of a `+pauses` shape.
pub const PAUSES: u64 = 40;

/// Which shape to write (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Plain,
    WithStack,
}

const PID: u32 = 1102;
const MAIN_TID: u32 = 1102;
const BWD_TID: u32 = 1262;

/// Writes the trace text into `out`, about `target_bytes` long.
struct Gen<W: Write> {
    out: W,
    rng: Rng,
    written: u64,
    /// Current host time in nanoseconds since the epoch.
    now_ns: u64,
    /// GPU stream time, kept ahead of the host.
    gpu_ns: u64,
    external_id: u64,
    correlation: u64,
    first_event: bool,
    shape: Shape,
    /// `with_stack`: the Python id of the last frame written.
    python_id: u64,
    /// Bytes of the log array before `traceEvents` and of the string after it.
    filler: (u64, u64),
    /// `+pauses`: the pauses' own generator (the shape's bytes between pauses stay the same).
    pauses: Option<Rng>,
}

/// Microseconds with three fraction digits, from nanoseconds.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

impl<W: Write> Gen<W> {
    fn put(&mut self, s: &str) -> std::io::Result<()> {
        self.written += s.len() as u64;
        self.out.write_all(s.as_bytes())
    }

    fn event(&mut self, body: &str) -> std::io::Result<()> {
        let sep = if self.first_event { "\n" } else { ",\n" };
        self.first_event = false;
        self.put(sep)?;
        self.put("  {\n")?;
        self.put(body)?;
        self.put("\n  }")
    }

    fn header(&mut self) -> std::io::Result<()> {
        self.put("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n")?;
        for id in 0..8 {
            let sep = if id < 7 { "," } else { "" };
            let dev = format!(
                "    {{\n      \"id\": {id}, \"name\": \"NVIDIA A100-SXM4-80GB\", \"totalGlobalMem\": 85097971712,\n      \"computeMajor\": 8, \"computeMinor\": 0,\n      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n      \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, \"warpSize\": 32,\n      \"sharedMemPerBlock\": 49152, \"sharedMemPerMultiprocessor\": 167936,\n      \"numSms\": 108, \"sharedMemPerBlockOptin\": 166912\n    }}{sep}\n"
            );
            self.put(&dev)?;
        }
        self.put("  ],\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 8, \"pg_count\": 2, \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", \"pg_size\": 8, \"ranks\": [0, 1, 2, 3, 4, 5, 6, 7]}], \"nccl_version\": \"2.20.5\"},\n")?;
        // A large non-traceEvents value before traceEvents: a Kineto-style log array, ~4 MiB.
        self.put("  \"INFO\": [")?;
        let mut n = 0u64;
        while n < self.filler.0 {
            let line = format!(
                "{}\"INFO:2024-04-03 18:51:{:02} 1102:1102 CuptiActivityProfiler.cpp:{}] Processed {} GPU records ({} bytes)\"",
                if n == 0 { "" } else { "," },
                n % 60,
                200 + n % 900,
                self.rng.below(1_000_000),
                self.rng.below(100_000_000)
            );
            n += line.len() as u64;
            self.put(&line)?;
        }
        self.put("],\n  \"traceEvents\": [")?;
        for (tid, name) in [
            (MAIN_TID, "python"),
            (BWD_TID, "pt_autograd_0"),
            (7, "stream 7"),
        ] {
            let pid = if tid == 7 { 0 } else { PID };
            let body = format!(
                "    \"name\": \"thread_name\", \"ph\": \"M\", \"ts\": {}, \"pid\": {pid}, \"tid\": {tid},\n    \"args\": {{\n      \"name\": \"{name}\"\n    }}",
                us(self.now_ns)
            );
            self.event(&body)?;
        }
        Ok(())
    }

    fn cpu_op(&mut self, tid: u32, ts_ns: u64, dur_ns: u64, name: &str) -> std::io::Result<()> {
        self.external_id += 1;
        let seq = self.rng.below(50_000);
        let args = if self.rng.below(3) == 0 {
            format!(
                "\"External id\": {},\"Sequence number\": {seq}, \"Fwd thread id\": 1, \"Ev Idx\": {}, \"Input Dims\": [[{}, {}], [{}, {}], []], \"Input type\": [\"float\", \"float\", \"Scalar\"]",
                self.external_id,
                self.external_id % 5000,
                1 + self.rng.below(4096),
                1 + self.rng.below(4096),
                1 + self.rng.below(4096),
                1 + self.rng.below(4096)
            )
        } else {
            format!(
                "\"External id\": {},\"Ev Idx\": {}",
                self.external_id,
                self.external_id % 5000
            )
        };
        let body = format!(
            "    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{name}\", \"pid\": {PID}, \"tid\": {tid},\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      {args}\n    }}",
            us(ts_ns),
            us(dur_ns)
        );
        self.event(&body)
    }

    /// A `cudaLaunchKernel` (or memcpy) with its flow events and the GPU-side event.
    fn launch(&mut self, ts_ns: u64) -> std::io::Result<u64> {
        self.correlation += 1;
        let corr = self.correlation;
        let dur_ns = 3_000 + self.rng.below(40_000);
        let memcpy = self.rng.below(10) == 0;
        let (api, cbid) = if memcpy {
            ("cudaMemcpyAsync", 41)
        } else {
            ("cudaLaunchKernel", 211)
        };
        let body = format!(
            "    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{api}\", \"pid\": {PID}, \"tid\": {MAIN_TID},\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"External id\": {},      \"cbid\": {cbid}, \"correlation\": {corr}\n    }}",
            us(ts_ns),
            us(dur_ns),
            self.external_id
        );
        self.event(&body)?;
        let body = format!(
            "    \"ph\": \"s\", \"id\": {corr}, \"pid\": {PID}, \"tid\": {MAIN_TID}, \"ts\": {},\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"",
            us(ts_ns)
        );
        self.event(&body)?;
        let gpu_start = self.gpu_ns.max(ts_ns + dur_ns / 2) + self.rng.below(5_000);
        let gpu_dur = if memcpy {
            1_000 + self.rng.below(300_000)
        } else {
            2_000 + self.rng.below(900_000)
        };
        let body = if memcpy {
            let bytes = 256 + self.rng.below(64 << 20);
            format!(
                "    \"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\", \"pid\": 0, \"tid\": 7,\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"External id\": {},      \"device\": 0, \"context\": 1,      \"stream\": 7, \"correlation\": {corr},      \"bytes\": {bytes}, \"memory bandwidth (GB/s)\": {:.6}\n    }}",
                us(gpu_start),
                us(gpu_dur),
                self.external_id,
                bytes as f64 / gpu_dur as f64
            )
        } else {
            let name = KERNELS[self.rng.below(KERNELS.len() as u64) as usize];
            format!(
                "    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{name}\", \"pid\": 0, \"tid\": 7,\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"External id\": {},      \"queued\": 0, \"device\": 0, \"context\": 1,      \"stream\": 7, \"correlation\": {corr},      \"registers per thread\": {},      \"shared memory\": {},      \"blocks per SM\": {:.6},      \"warps per SM\": {:.6},      \"grid\": [{}, {}, 1],      \"block\": [{}, 1, 1],      \"est. achieved occupancy %\": {}\n    }}",
                us(gpu_start),
                us(gpu_dur),
                self.external_id,
                16 + self.rng.below(240),
                self.rng.below(4) * 16384,
                self.rng.below(100_000) as f64 / 1000.0,
                self.rng.below(6_400_000) as f64 / 100_000.0,
                1 + self.rng.below(1024),
                1 + self.rng.below(128),
                32 << self.rng.below(5),
                self.rng.below(100)
            )
        };
        self.event(&body)?;
        let body = format!(
            "    \"ph\": \"f\", \"id\": {corr}, \"pid\": 0, \"tid\": 7, \"ts\": {},\n    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"",
            us(gpu_start)
        );
        self.event(&body)?;
        self.gpu_ns = gpu_start + gpu_dur;
        Ok(dur_ns)
    }

    /// One training step: a B/E annotation around nested cpu_ops and their launches.
    fn step(&mut self, step: u64) -> std::io::Result<()> {
        let tid = if step.is_multiple_of(2) {
            MAIN_TID
        } else {
            BWD_TID
        };
        let step_start = self.now_ns;
        if self.shape == Shape::Plain {
            let body = format!(
                "    \"ph\": \"B\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{step}\", \"pid\": {PID}, \"tid\": {tid},\n    \"ts\": {}",
                us(step_start)
            );
            self.event(&body)?;
        }
        let ops = 20 + self.rng.below(40);
        let mut t = step_start + 1_000;
        for _ in 0..ops {
            let name = CPU_OPS[self.rng.below(CPU_OPS.len() as u64) as usize];
            let child = CPU_OPS[self.rng.below(CPU_OPS.len() as u64) as usize];
            // Parent op spans its child op and one or two launches.
            let mut inner = t + 2_000 + self.rng.below(5_000);
            let child_start = inner;
            inner += 1_000 + self.rng.below(3_000);
            for _ in 0..1 + self.rng.below(2) {
                let d = self.launch(inner)?;
                inner += d + 500 + self.rng.below(2_000);
            }
            let child_dur = inner - child_start;
            let end = inner + 1_000 + self.rng.below(4_000);
            self.cpu_op(tid, t, end - t, name)?;
            self.cpu_op(tid, child_start, child_dur, child)?;
            if self.shape == Shape::WithStack {
                self.python_stack(tid, t, end)?;
            }
            t = end + self.rng.below(20_000);
        }
        if self.pauses.is_some() {
            // `loss.item()`: the host waits for the step's kernels, so host and GPU time stay
            // together and a host pause is a GPU pause.
            let until = self.gpu_ns.max(t) + 5_000;
            let body = format!(
                "    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\", \"pid\": {PID}, \"tid\": {tid},\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"cbid\": 131, \"correlation\": {}\n    }}",
                us(t),
                us(until - t),
                self.correlation
            );
            self.event(&body)?;
            t = until + 2_000;
        }
        if self.shape == Shape::Plain {
            let body = format!(
                "    \"ph\": \"E\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{step}\", \"pid\": {PID}, \"tid\": {tid},\n    \"ts\": {}",
                us(t)
            );
            self.event(&body)?;
        } else {
            let body = format!(
                "    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{step}\", \"pid\": {PID}, \"tid\": {tid},\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"External id\": {}\n    }}",
                us(step_start),
                us(t - step_start),
                self.external_id
            );
            self.event(&body)?;
        }
        self.now_ns = t + 10_000 + self.rng.below(100_000);
        Ok(())
    }

    /// `with_stack`: the Python frames around a cpu_op that spans `[start_ns, end_ns)`, outermost
    /// first: one or two frames from the few at the top of every stack, then one to five from
    /// the pool of thousands, each a little wider than the frame it calls.
    fn python_stack(&mut self, tid: u32, start_ns: u64, end_ns: u64) -> std::io::Result<()> {
        let top = 1 + self.rng.below(2) as usize;
        let deep = 1 + self.rng.below(5) as usize;
        let depth = top + deep;
        let pool = PY_FILES.len() * PY_FUNCS.len() * PY_LINES_PER_FUNC;
        let parent = self.python_id;
        for level in 0..depth {
            let name = if level < top {
                PY_TOP[self.rng.below(PY_TOP.len() as u64) as usize].to_string()
            } else {
                py_frame(self.rng.below(pool as u64) as usize)
            };
            // Outer frames start earlier and end later than the frames they call.
            let pad_ns = (depth - level) as u64 * (200 + self.rng.below(300));
            let ts = start_ns.saturating_sub(pad_ns);
            let dur = end_ns + pad_ns - ts;
            self.python_id += 1;
            let body = format!(
                "    \"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"{name}\", \"pid\": {PID}, \"tid\": {tid},\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"Python parent id\": {}, \"Python id\": {}, \"Python thread\": 0\n    }}",
                us(ts),
                us(dur),
                if level == 0 {
                    parent
                } else {
                    self.python_id - 1
                },
                self.python_id
            );
            self.event(&body)?;
        }
        Ok(())
    }

    /// A data-loading pause of 100-800 ms on the host, with the GPU idle (`+pauses`): an `X`
    /// annotation over the pause and a `cpu_op` every 15-45 ms under it.
    fn pause(&mut self) -> std::io::Result<()> {
        let Some(rng) = self.pauses.as_mut() else {
            return Ok(());
        };
        let len_ns = 100_000_000 + rng.below(700_000_000);
        let mut ops = Vec::new();
        let mut t = self.now_ns + 1_000_000 + rng.below(1_000_000);
        let end = self.now_ns + len_ns - 1_000_000;
        while t + 10_000_000 < end {
            let dur = 2_000_000 + rng.below(8_000_000);
            ops.push((
                t,
                dur,
                ["aten::stack", "aten::pin_memory", "aten::to"][rng.below(3) as usize],
            ));
            t += dur + 15_000_000 + rng.below(30_000_000);
        }
        let start = self.now_ns;
        self.external_id += 1;
        let body = format!(
            "    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__\", \"pid\": {PID}, \"tid\": {MAIN_TID},\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"External id\": {}\n    }}",
            us(start),
            us(len_ns - 500_000),
            self.external_id
        );
        self.event(&body)?;
        for (ts, dur, name) in ops {
            self.cpu_op(MAIN_TID, ts, dur, name)?;
        }
        self.now_ns = start + len_ns;
        Ok(())
    }

    fn trailer(&mut self) -> std::io::Result<()> {
        self.put("\n  ],\n  \"systemTraceEvents\": \"")?;
        // A large string value after traceEvents: 32 MiB of escaped ftrace-like text.
        let line =
            "          <idle>-0     [001] d..2 12345.678901: sched_switch: prev_comm=swapper\\n";
        let mut n = 0;
        while n < self.filler.1 {
            self.put(line)?;
            n += line.len() as u64;
        }
        self.put("\",\n  \"traceName\": \"/tmp/libkineto_activities_1102.json\",\n  \"displayTimeUnit\": \"ns\",\n  \"baseTimeNanoseconds\": 1712195400000000000\n}\n")
    }
}

/// Writes every byte to a plain file and to a gzip encoder.
struct Tee<A: Write, B: Write>(A, B);

impl<A: Write, B: Write> Write for Tee<A, B> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write_all(buf)?;
        self.1.write_all(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()?;
        self.1.flush()
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(
        args.next()
            .ok_or("usage: gen_trace OUT_DIR [MEGABYTES] [SHAPE]")?,
    );
    let megabytes: u64 = match args.next() {
        Some(s) => s.parse()?,
        None => 1000,
    };
    let shape = args.next().unwrap_or_else(|| "plain".into());
    let (bytes, steps) = generate(&dir, megabytes * 1_000_000, &shape, (4 << 20, 32 << 20))?;
    eprintln!(
        "gen_trace: {bytes} bytes, {steps} steps, in {}",
        dir.display()
    );
    Ok(())
}

/// Writes `dir/trace.json` and `dir/trace.json.gz` of about `target` bytes in `shape` (`plain`
/// or `with_stack`), with `filler` bytes of log array before `traceEvents` and of string after
/// it (the benchmark's: 4 MiB and 32 MiB). Returns the bytes and steps written.
pub fn generate(
    dir: &std::path::Path,
    target: u64,
    shape: &str,
    filler: (u64, u64),
) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let (shape, pauses) = match shape.strip_suffix("+pauses") {
        Some(s) => (s, true),
        None => (shape, false),
    };
    let shape = match shape {
        "plain" => Shape::Plain,
        "with_stack" => Shape::WithStack,
        other => {
            return Err(format!(
                "unknown shape {other:?}: plain or with_stack, optionally with +pauses"
            )
            .into());
        }
    };
    std::fs::create_dir_all(dir)?;
    let json = BufWriter::with_capacity(1 << 20, File::create(dir.join("trace.json"))?);
    let gz = flate2::write::GzEncoder::new(
        BufWriter::with_capacity(1 << 20, File::create(dir.join("trace.json.gz"))?),
        flate2::Compression::new(6),
    );
    let mut g = Gen {
        out: Tee(json, gz),
        rng: Rng(0x5eed_f11c),
        written: 0,
        now_ns: 1_712_195_495_406_752_800,
        gpu_ns: 0,
        external_id: 0,
        correlation: 135_000,
        first_event: true,
        shape,
        python_id: 0,
        filler,
        pauses: pauses.then_some(Rng(0x009a_05e5)),
    };
    g.header()?;
    // Room for the trailer.
    let reserve = filler.1 + (filler.1 >> 2);
    let mut step = 0;
    // The next pause comes once this many bytes are written: spread evenly over the events,
    // half a spacing in.
    let events_bytes = target.saturating_sub(reserve + g.written);
    let spacing = events_bytes / PAUSES;
    let mut next_pause = g.written + spacing / 2;
    while g.written + reserve < target {
        if g.pauses.is_some() && g.written >= next_pause {
            g.pause()?;
            next_pause += spacing;
        }
        g.step(step)?;
        step += 1;
    }
    g.trailer()?;
    let Tee(mut json, gz) = g.out;
    json.flush()?;
    gz.finish()?.flush()?;
    Ok((g.written, step))
}
