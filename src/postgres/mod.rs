//! PostgreSQL plumbing under everything else: the application's functions that metadata names
//! ([app_function]), read-only SPI ([spi_read]), the backend guards and
//! the pinned clock ([guards]), and the hard time bound of a call ([deadline]), and serving
//! read-only on a hot standby ([standby]).

pub mod app_function;
pub mod deadline;
pub mod guards;
pub mod spi_read;
pub mod standby;
