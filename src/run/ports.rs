//! `AUTOMATON_PORT`: a TCP port for each task being driven, unique among the tasks of this run
//! that are driven at the same time, for dev servers and test databases. A task holds the
//! lowest free slot while it is driven (a parent holds its own while its sub-tasks run);
//! the port is [`PORT_BASE`] plus the slot index, so the first task gets 20000, two parallel
//! sub-tasks 20001 and 20002, and a slot is free again once its task stops. Nothing is bound
//! or probed: the port is a number the agent, the verify and the setup commands may use.

use std::sync::Mutex;

/// The first port handed out.
pub const PORT_BASE: u16 = 20000;

/// The slots held now: index → the task holding it.
#[derive(Default)]
pub struct Ports {
    held: Mutex<Vec<Option<String>>>,
}

/// One task's port, free again when dropped.
pub struct PortLease<'a> {
    ports: &'a Ports,
    slot: usize,
    pub port: u16,
}

impl Ports {
    pub fn new() -> Self {
        Ports::default()
    }

    /// The lowest free slot for `task`; the one it holds already when it is driven again in
    /// the same run (nested: the lease of the outer drive stays in force).
    pub fn acquire(&self, task: &str) -> Option<PortLease<'_>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.iter().any(|h| h.as_deref() == Some(task)) {
            return None;
        }
        let slot = match held.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                held.push(None);
                held.len() - 1
            }
        };
        let port = PORT_BASE.checked_add(u16::try_from(slot).ok()?)?;
        held[slot] = Some(task.to_string());
        Some(PortLease {
            ports: self,
            slot,
            port,
        })
    }

    /// The port `task` holds now, if any.
    pub fn port_of(&self, task: &str) -> Option<u16> {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.iter()
            .position(|h| h.as_deref() == Some(task))
            .and_then(|i| PORT_BASE.checked_add(u16::try_from(i).ok()?))
    }
}

impl Drop for PortLease<'_> {
    fn drop(&mut self) {
        let mut held = self.ports.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = held.get_mut(self.slot) {
            *h = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_unique_while_held_and_reused_once_free() {
        let ports = Ports::new();
        let a = ports.acquire("tasks/p").unwrap();
        let b = ports.acquire("tasks/p/subtasks/a").unwrap();
        let c = ports.acquire("tasks/p/subtasks/b").unwrap();
        assert_eq!((a.port, b.port, c.port), (20000, 20001, 20002));
        assert!(ports.acquire("tasks/p").is_none(), "already held");
        assert_eq!(ports.port_of("tasks/p/subtasks/a"), Some(20001));
        drop(b);
        assert_eq!(ports.port_of("tasks/p/subtasks/a"), None);
        let d = ports.acquire("tasks/p/subtasks/c").unwrap();
        assert_eq!(d.port, 20001, "the lowest free slot");
        assert_eq!(ports.port_of("tasks/p"), Some(20000));
    }
}
