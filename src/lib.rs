use pgrx::prelude::*;
::pgrx::pg_module_magic!();

#[pg_extern]
fn hello_chumbo() -> &'static str { "Hello, chumbo" }

#[cfg(any(test, feature = "pg_test"))]
#[pg_schema]
mod tests {}

#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}
    pub fn postgresql_conf_options() -> Vec<&'static str> { vec![] }
}
