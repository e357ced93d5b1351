//! PostgreSQL plumbing under everything else: read-only SPI ([spi_read]), the backend guards and
//! the pinned clock ([guards]), and the hard time bound of a call ([deadline]).

pub mod deadline;
pub mod guards;
pub mod spi_read;
