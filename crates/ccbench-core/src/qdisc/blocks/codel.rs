//! STUB: replaced by the CoDel state machine.
