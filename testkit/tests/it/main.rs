//! The test kit's own tests, in one binary (one link): the crates' module graphs, and the
//! simulator in the test command.

mod no_import_cycles;
mod sim;
