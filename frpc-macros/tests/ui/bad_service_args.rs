use frpc::{Context, Status};

#[frpc::service(first_op = 3)]
trait Low {
    async fn call(&self, ctx: &Context, request: ()) -> Result<(), Status>;
}

#[frpc::service(package = "has space.1bad")]
trait BadPackage {
    async fn call(&self, ctx: &Context, request: ()) -> Result<(), Status>;
}

#[frpc::service(name = "x")]
trait Named {
    async fn call(&self, ctx: &Context, request: ()) -> Result<(), Status>;
}

/// Doc comments are fine; other attributes are not.
#[frpc::service]
#[allow(dead_code)]
trait Attributed: Clone {
    async fn call(&self, ctx: &Context, request: ()) -> Result<(), Status>;
}

fn main() {}
