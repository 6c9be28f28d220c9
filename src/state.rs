//! The pure state machine.
