"""Strip world-only items (floor, light) and MuJoCo actuators/sensors from the robolearn quadruped MJCF,
then convert it to USD with mujoco-usd-converter (run with the converter venv's python)."""
import re, subprocess, sys, pathlib
src = pathlib.Path(sys.argv[1]); out_dir = pathlib.Path(sys.argv[2])
xml = src.read_text()
xml = re.sub(r'\s*<geom name="floor"[^>]*/>', '', xml)
xml = re.sub(r'\s*<light [^>]*/>', '', xml)
xml = re.sub(r'\s*<actuator>.*?</actuator>', '', xml, flags=re.S)
xml = re.sub(r'\s*<sensor>.*?</sensor>', '', xml, flags=re.S)
xml = re.sub(r'\s*<keyframe>.*?</keyframe>', '', xml, flags=re.S)
xml = xml.replace('<size nkey="1"/>', '')
robot_xml = src.with_name("quadruped_robot_only.xml"); robot_xml.write_text(xml)
subprocess.run([str(pathlib.Path(sys.executable).parent / "mujoco_usd_converter"), "--no-layer-structure", "--no-physics-scene",
                str(robot_xml), str(out_dir)], check=True)
