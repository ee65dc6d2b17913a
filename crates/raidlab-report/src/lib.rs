//! Reports: tables for the terminal, the documents' tables reproduced with
//! published and simulated values side by side, and their JSON.
//! This crate formats results; it runs nothing.

#![warn(missing_docs)]

pub mod fio;
pub mod html;
pub mod plan;
pub mod plot;
pub mod reproduce;
pub mod sweep;
pub mod text;
