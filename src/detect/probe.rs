//! The built-in probe: GPUs through NVML (loaded at run time), host RAM through sysinfo.
//!
//! [`Probe`] abstracts both so that the combination logic ([`combine`]) is tested with fake
//! devices and no driver.

pub const GIB: f64 = (1u64 << 30) as f64;

/// One GPU as the probe saw it, in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    pub index: u32,
    pub name: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
}

pub use crate::store::vram_cache::GpuReport;

/// Host memory, in bytes, already limited to the cgroup where there is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostMemory {
    pub total_bytes: u64,
    pub available_bytes: u64,
}

/// A source of GPU and RAM facts.
pub trait Probe {
    /// Every GPU; `Ok(vec![])` when the driver answers but has no device; `Err(reason)` when
    /// there is no driver or library (which means "no GPU", never a failure of the command).
    /// Devices whose memory cannot be read are left out, with a warning.
    fn gpus(&self, warnings: &mut Vec<String>) -> Result<Vec<Gpu>, String>;
    /// Host RAM, `None` when it cannot be read.
    fn host_memory(&self) -> Option<HostMemory>;
}

/// What the probe found, combined.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProbeResult {
    /// `round(sum of every GPU's total / GiB)`; `None` when no GPU was found.
    pub vram_gib: Option<u64>,
    pub gpus: Vec<GpuReport>,
    /// Why no GPU was found, when none was.
    pub no_gpu_reason: Option<String>,
    /// Host RAM in GiB, one decimal.
    pub ram_gb: Option<f64>,
}

/// Run a probe and combine its devices.
///
/// Several GPUs are combined by **summing** their total memory: ollama's VRAM tiers sum
/// `total - overhead` over all GPUs, llama.cpp's `--fit` sums free memory across devices, and
/// vLLM's tensor parallelism splits the KV cache across GPUs, so KV capacity adds up. The sum is
/// rounded to whole GiB (an "8 GB" card reports a little under 8 GiB, so flooring would lose a
/// GiB per card). The VRAM-only rule caps the budget at 32k tokens, so a big sum cannot run away;
/// every device is also listed on its own in the report.
pub fn run_probe(probe: &dyn Probe, warnings: &mut Vec<String>) -> ProbeResult {
    let (gpus, reason) = match probe.gpus(warnings) {
        Ok(g) if g.is_empty() => (g, Some("the NVIDIA driver reports no GPU".to_string())),
        Ok(g) => (g, None),
        Err(reason) => (Vec::new(), Some(reason)),
    };
    let (vram_gib, gpus) = combine(&gpus);
    ProbeResult {
        vram_gib,
        gpus,
        no_gpu_reason: reason,
        ram_gb: probe
            .host_memory()
            .filter(|m| m.total_bytes > 0)
            .map(|m| round_to(m.total_bytes as f64 / GIB, 1)),
    }
}

/// The summed VRAM in whole GiB and the per-device report. Pure.
pub fn combine(gpus: &[Gpu]) -> (Option<u64>, Vec<GpuReport>) {
    if gpus.is_empty() {
        return (None, Vec::new());
    }
    let total: u128 = gpus.iter().map(|g| u128::from(g.total_bytes)).sum();
    let vram = (total as f64 / GIB).round() as u64;
    let report = gpus
        .iter()
        .map(|g| GpuReport {
            index: g.index,
            name: g.name.clone(),
            total_gb: round_to(g.total_bytes as f64 / GIB, 2),
            free_gb: round_to(g.free_bytes as f64 / GIB, 2),
        })
        .collect();
    (Some(vram), report)
}

pub fn round_to(v: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (v * f).round() / f
}

/// The real probe: NVML through `nvml-wrapper` and RAM through `sysinfo`.
pub struct SystemProbe;

impl Probe for SystemProbe {
    fn gpus(&self, warnings: &mut Vec<String>) -> Result<Vec<Gpu>, String> {
        use nvml_wrapper::Nvml;
        use nvml_wrapper::error::NvmlError;
        let nvml = Nvml::init().map_err(|e| match e {
            NvmlError::LibloadingError(_) => {
                "no NVIDIA library (libnvidia-ml.so.1 not found)".to_string()
            }
            NvmlError::DriverNotLoaded => "the NVIDIA driver is not loaded".to_string(),
            NvmlError::NoPermission => "no permission to talk to the NVIDIA driver".to_string(),
            other => format!("NVML could not start: {other}"),
        })?;
        let count = nvml
            .device_count()
            .map_err(|e| format!("NVML could not count GPUs: {e}"))?;
        let mut out = Vec::new();
        for index in 0..count {
            let device = match nvml.device_by_index(index) {
                Ok(d) => d,
                Err(e) => {
                    warnings.push(format!("GPU {index}: cannot open it through NVML ({e})"));
                    continue;
                }
            };
            match device.memory_info() {
                Ok(m) => out.push(Gpu {
                    index,
                    name: device.name().unwrap_or_else(|_| "unknown".to_string()),
                    total_bytes: m.total,
                    free_bytes: m.free,
                }),
                Err(e) => warnings.push(format!(
                    "GPU {index}: NVML cannot read its memory ({e}); left out"
                )),
            }
        }
        Ok(out)
    }

    fn host_memory(&self) -> Option<HostMemory> {
        let mut sys = sysinfo::System::new().ok()?;
        sys.refresh_memory();
        let mut total = sys.total_memory();
        let mut available = sys.available_memory();
        if let Some(limits) = sys.cgroup_limits()
            && limits.total_memory > 0
        {
            total = total.min(limits.total_memory);
            available = available.min(limits.free_memory);
        }
        (total > 0).then_some(HostMemory {
            total_bytes: total,
            available_bytes: available,
        })
    }
}

/// A probe with made-up devices, for tests (also used by the detector's tests).
#[derive(Debug, Clone)]
pub struct FakeProbe {
    /// `Err(reason)`: no driver.
    pub gpus: Result<Vec<Gpu>, String>,
    pub ram_bytes: u64,
}

impl Probe for FakeProbe {
    fn gpus(&self, _warnings: &mut Vec<String>) -> Result<Vec<Gpu>, String> {
        self.gpus.clone()
    }

    fn host_memory(&self) -> Option<HostMemory> {
        (self.ram_bytes > 0).then_some(HostMemory {
            total_bytes: self.ram_bytes,
            available_bytes: self.ram_bytes / 2,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn gpu(index: u32, total_mib: u64, free_mib: u64) -> Gpu {
        Gpu {
            index,
            name: format!("Fake GPU {index}"),
            total_bytes: total_mib * MIB,
            free_bytes: free_mib * MIB,
        }
    }

    #[test]
    fn no_driver_means_no_gpu_with_a_reason() {
        let p = FakeProbe {
            gpus: Err("no NVIDIA library".into()),
            ram_bytes: 16 << 30,
        };
        let r = run_probe(&p, &mut Vec::new());
        assert_eq!(r.vram_gib, None);
        assert!(r.gpus.is_empty());
        assert_eq!(r.no_gpu_reason.as_deref(), Some("no NVIDIA library"));
        assert_eq!(r.ram_gb, Some(16.0));
    }

    #[test]
    fn zero_gpus() {
        let p = FakeProbe {
            gpus: Ok(vec![]),
            ram_bytes: 0,
        };
        let r = run_probe(&p, &mut Vec::new());
        assert_eq!(r.vram_gib, None);
        assert!(r.no_gpu_reason.is_some());
        assert_eq!(r.ram_gb, None);
    }

    #[test]
    fn one_gpu_rounds_to_nearest_gib() {
        // An "8 GB" card reports 8188 MiB: 7.996 GiB, which must read as 8, not 7.
        let p = FakeProbe {
            gpus: Ok(vec![gpu(0, 8188, 7000)]),
            ram_bytes: 32 << 30,
        };
        let r = run_probe(&p, &mut Vec::new());
        assert_eq!(r.vram_gib, Some(8));
        assert_eq!(r.gpus.len(), 1);
        assert_eq!(r.gpus[0].total_gb, 8.0);
        assert_eq!(r.gpus[0].free_gb, 6.84);
        assert_eq!(r.no_gpu_reason, None);
    }

    #[test]
    fn several_gpus_sum() {
        // 2 x 24 GiB + 1 x 12 GiB -> 60 GiB total, each listed.
        let p = FakeProbe {
            gpus: Ok(vec![
                gpu(0, 24 * 1024, 20 * 1024),
                gpu(1, 24 * 1024, 1024),
                gpu(2, 12 * 1024 - 100, 12 * 1024 - 200),
            ]),
            ram_bytes: 64 << 30,
        };
        let r = run_probe(&p, &mut Vec::new());
        assert_eq!(r.vram_gib, Some(60));
        assert_eq!(
            r.gpus.iter().map(|g| g.index).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(r.gpus[1].free_gb, 1.0);
        // Two 4 GiB cards read like one 8 GiB card, not like 2 x 4.
        let (v, _) = combine(&[gpu(0, 4096, 4096), gpu(1, 4094, 0)]);
        assert_eq!(v, Some(8));
    }

    #[test]
    fn the_real_probe_never_panics_and_reads_ram() {
        let mut w = Vec::new();
        let r = run_probe(&SystemProbe, &mut w);
        // This machine has RAM; GPUs may or may not be there.
        let ram = r.ram_gb.expect("RAM read");
        assert!(ram > 0.0, "{r:?}");
        // No more than the kernel says the machine has (a cgroup limit can only lower it).
        let meminfo = std::fs::read_to_string("/proc/meminfo").expect("/proc/meminfo");
        let total_kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("MemTotal");
        assert!(
            ram <= (total_kib * 1024.0 / GIB * 10.0).round() / 10.0,
            "{r:?}"
        );
        // Either GPUs and their summed VRAM, or no GPU and why: never both, never neither.
        match (&r.vram_gib, &r.no_gpu_reason) {
            (Some(v), None) => {
                assert!(!r.gpus.is_empty(), "{r:?}");
                let sum: f64 = r.gpus.iter().map(|g| g.total_gb).sum();
                assert!(
                    (*v as f64 - sum).abs() <= 0.5 + 0.01 * r.gpus.len() as f64,
                    "{r:?}"
                );
                for g in &r.gpus {
                    assert!(g.total_gb > 0.0 && g.free_gb <= g.total_gb, "{r:?}");
                }
            }
            (None, Some(reason)) => {
                assert!(r.gpus.is_empty(), "{r:?}");
                assert!(!reason.trim().is_empty(), "{r:?}");
            }
            _ => panic!("VRAM and the no-GPU reason disagree: {r:?}"),
        }
    }
}
