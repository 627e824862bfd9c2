"""The ROS 2 arm bridge (rclpy half): the transport of :mod:`captain_ros.backends.ros_arm` and the
MuJoCo-backed driver node it is tested against."""
