"""Build the local asset root used via ISAACSIM_ASSET_ROOT (no NVIDIA asset store access):
  <root>/Isaac/IsaacLab/Environments/Grid/default_ground_plane_checker_v1/default_ground_plane.usda
      a minimal ground plane (Xform + collision Plane prim, which spawn_ground_plane looks for)
  <root>/Isaac/IsaacLab/Robots/RoboLearn/Quadruped/quadruped.usdc
      the robolearn quadruped converted from MJCF (see convert_robot.py)
"""
import pathlib, shutil, sys
root = pathlib.Path(sys.argv[1]); robot_usd = pathlib.Path(sys.argv[2])
gp = root / "Isaac/IsaacLab/Environments/Grid/default_ground_plane_checker_v1/default_ground_plane.usda"
gp.parent.mkdir(parents=True, exist_ok=True)
gp.write_text('''#usda 1.0
(
    defaultPrim = "GroundPlane"
    metersPerUnit = 1
    upAxis = "Z"
)

def Xform "GroundPlane"
{
    def Plane "CollisionPlane" (
        prepend apiSchemas = ["PhysicsCollisionAPI"]
    )
    {
        uniform token axis = "Z"
        double length = 100
        double width = 100
        uniform token purpose = "default"
    }
}
''')
rd = root / "Isaac/IsaacLab/Robots/RoboLearn/Quadruped"
rd.mkdir(parents=True, exist_ok=True)
shutil.copy(robot_usd, rd / "quadruped.usdc")
print("assets in", root)
