//! Placeholder: filled by its issue (see README 'Status').
