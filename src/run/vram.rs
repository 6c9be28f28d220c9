//! VRAM admission for parallel sub-tasks that run a local model.
//!
//! When config.md's `## VRAM Configuration` gives both `Model weights` (e.g. `4 GB`) and
//! `KV bytes per token` (e.g. `131072`), a sub-task's need is its `Estimated peak context` (its
//! row of the parent's DECOMPOSITION.md) × bytes per token. With `local` and `tmux` a sub-task's
//! phase starts only while the weights plus the needs of the phases already running fit in the
//! budget: the detected (or configured) GPU VRAM less `Headroom`; a sub-task that could never fit
//! is refused with the numbers. With `slurm` the need is requested as a consumable GRES instead
//! (`--gres=vram:<n>G`), and Slurm packs the jobs.
//!
//! Worked example (Llama 3.1 8B in fp16): weights ≈ 15 GB; KV cache per token = 2 (K and V) ×
//! 32 layers × 8 KV heads × 128 dims × 2 bytes = 131072 bytes. On a 48 GB GPU with 25% headroom
//! the budget is 36 GB: 21 GB for contexts, so two 64k-token sub-tasks (8 GB each) run at once,
//! and a third waits (24 GB).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// A GB here is a GiB (2^30 bytes), the unit `detect-vram` reports GPU memory in.
const GB: f64 = 1_073_741_824.0;

/// The admission gate of one run.
#[derive(Debug)]
pub struct Admission {
    /// Bytes the weights and the running needs may take together.
    pub budget: u64,
    pub weights: u64,
    pub kv_per_token: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

/// Holds a sub-task's need until dropped.
pub struct Admitted<'a>(&'a Admission, u64);

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        let mut used = self.0.used.lock().unwrap_or_else(|e| e.into_inner());
        *used = used.saturating_sub(self.1);
        self.0.freed.notify_all();
    }
}

/// `4 GB`, `4GB`, `4.5 GiB`, `4096 MB`, `4` (GB): bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let n: f64 = t[..split].trim().parse().ok()?;
    let unit = match t[split..].trim() {
        "" | "g" | "gb" | "gib" => GB,
        "m" | "mb" | "mib" => GB / 1024.0,
        "t" | "tb" | "tib" => GB * 1024.0,
        _ => return None,
    };
    (n >= 0.0).then_some((n * unit) as u64)
}

/// GB with one decimal, for messages.
pub fn gb(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / GB)
}

impl Admission {
    /// The gate, when weights and bytes per token are both configured and a GPU size is known.
    pub fn new(
        weights: Option<&str>,
        kv_per_token: u64,
        gpu_gb: Option<f64>,
        headroom: f64,
    ) -> Option<Admission> {
        let weights = parse_size(weights?)?;
        if kv_per_token == 0 {
            return None;
        }
        let gpu = gpu_gb.filter(|g| *g > 0.0)?;
        Some(Admission {
            budget: (gpu * GB * (1.0 - headroom.clamp(0.0, 0.95))) as u64,
            weights,
            kv_per_token,
            used: Mutex::new(0),
            freed: Condvar::new(),
        })
    }

    /// A sub-task's need in bytes: its estimated peak context × bytes per token.
    pub fn need(&self, task_dir: &Path) -> Option<u64> {
        estimate(task_dir).map(|tokens| tokens.saturating_mul(self.kv_per_token))
    }

    /// `Err(message)` with the numbers when `need` can never fit, even alone.
    pub fn check(&self, rel: &str, need: u64) -> Result<(), String> {
        if self.weights + need > self.budget {
            return Err(format!(
                "{rel} needs {} of VRAM for its context (estimated peak context × KV bytes per \
                 token), and with the model's weights ({}) that exceeds the budget of {} \
                 (GPU VRAM less headroom); split it in DECOMPOSITION.md or give it a smaller estimate",
                gb(need),
                gb(self.weights),
                gb(self.budget)
            ));
        }
        Ok(())
    }

    /// The figures admission uses, one per line (for `detect-vram --human` and `status`).
    pub fn figures(&self) -> String {
        format!(
            "Model weights: {}\nKV bytes per token: {}\nAdmission budget: {} (GPU VRAM less headroom; weights + running sub-tasks' needs must fit)\n",
            gb(self.weights),
            self.kv_per_token,
            gb(self.budget)
        )
    }

    /// The gate a project's settings configure, when they do (and a GPU size is known).
    pub fn from_settings(
        settings: &crate::settings::Settings,
        gpu_gb: Option<f64>,
    ) -> Option<Admission> {
        Admission::configured(&super::config::VramFigures::from_settings(settings), gpu_gb)
    }

    /// The gate the run's figures configure, when they do (and a GPU size is known).
    pub fn configured(
        figures: &super::config::VramFigures,
        gpu_gb: Option<f64>,
    ) -> Option<Admission> {
        Admission::new(
            figures.weights.as_deref(),
            figures.kv_bytes_per_token,
            gpu_gb,
            figures.headroom,
        )
    }

    /// Wait until `need` fits beside the running needs. `Err(message)` when it never can.
    /// After Ctrl-C it stops waiting (the agent starts and is stopped at once).
    pub fn admit(
        &self,
        rel: &str,
        need: u64,
        cancel: &AtomicBool,
    ) -> Result<Option<Admitted<'_>>, String> {
        self.check(rel, need)?;
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.weights + *used + need <= self.budget {
                *used += need;
                return Ok(Some(Admitted(self, need)));
            }
            if cancel.load(Ordering::SeqCst) {
                return Ok(None);
            }
            used = self
                .freed
                .wait_timeout(used, Duration::from_millis(50))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

/// A sub-task's `Estimated peak context`, from its row of the parent's DECOMPOSITION.md.
pub fn estimate(task_dir: &Path) -> Option<u64> {
    let subtasks = task_dir.parent()?;
    if subtasks.file_name()? != "subtasks" {
        return None;
    }
    let name = task_dir.file_name()?.to_str()?;
    let text = std::fs::read_to_string(subtasks.parent()?.join("DECOMPOSITION.md")).ok()?;
    let plan = crate::artifact::decomposition::parse_decomposition(&text).ok()?;
    plan.rows.into_iter().find(|r| r.name == name)?.estimate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4 GB"), Some(4 << 30));
        assert_eq!(parse_size("4"), Some(4 << 30));
        assert_eq!(parse_size("512 MB"), Some(512 << 20));
        assert_eq!(parse_size("lots"), None);
    }

    #[test]
    fn admits_while_it_fits_and_refuses_what_never_fits() {
        let a = Admission::new(Some("2 GB"), 1 << 20, Some(24.0), 0.0).unwrap();
        let stop = AtomicBool::new(false);
        let ten = 10 << 30;
        let one = a.admit("a", ten, &stop).unwrap().unwrap();
        let two = a.admit("b", ten, &stop).unwrap().unwrap();
        // A third would need 32 GB: it waits until one is done.
        stop.store(true, Ordering::SeqCst);
        assert!(a.admit("c", ten, &stop).unwrap().is_none());
        drop(one);
        assert!(a.admit("c", ten, &stop).unwrap().is_some());
        drop(two);
        let err = a.admit("big", 30 << 30, &stop).err().unwrap();
        assert!(err.contains("30.0 GB") && err.contains("24.0 GB"), "{err}");
        assert!(Admission::new(None, 1, Some(24.0), 0.0).is_none());
    }
}
